"""`michi status` without typer: monitors call it every few seconds and it must cost no more than `task list`
(ADR 0013), while typer's parsing alone costs ~200 ms (see `main._plain_read`). A plainly spelled status is
parsed here and runs `run_status`, which the typer verb runs too; anything else (--help, a bad value, an
unknown option) goes to typer, which stays the one definition of the command line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from michi.session import Session

_FLAGS = {"--fetch": "fetch", "--check": "check", "--reap": "reap"}
_LIMITS = {"--max-lock-age": "max_lock_age", "--max-claim-overdue": "max_claim_overdue",
           "--max-unsynced": "max_unsynced"}  # fmt: skip


def _seconds(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if value >= 0 and value == value else None  # NaN and negatives: typer explains them


def parse(args: list[str]) -> tuple[str | None, str | None, dict[str, Any]] | None:
    """(-C path, --agent, status's keyword arguments) of a plainly spelled status, else None."""
    root: dict[str, str | None] = {"-C": None, "--agent": None}
    while args[:1] and args[0] in root:
        if len(args) < 2 or not args[1] or args[1].startswith("-") or root[args[0]] is not None:
            return None
        root[args[0]], args = args[1], args[2:]
    if args[:1] != ["status"]:
        return None
    kw: dict[str, Any] = {"fetch": False, "check": False, "reap": False, "max_lock_age": None,
                          "max_claim_overdue": 0.0, "max_unsynced": 0.0}  # fmt: skip
    rest = args[1:]
    while rest:
        word, rest = rest[0], rest[1:]
        name, eq, value = word.partition("=")
        if name in _FLAGS and not eq:
            kw[_FLAGS[name]] = True
        elif name in _LIMITS:
            if not eq:
                if not rest:
                    return None
                value, rest = rest[0], rest[1:]
            seconds = _seconds(value)
            if seconds is None:
                return None
            kw[_LIMITS[name]] = seconds
        else:
            return None
    return root["-C"], root["--agent"], kw


def run(parsed: tuple[str | None, str | None, dict[str, Any]], json_mode: bool, argv: list[str]) -> Any:
    where, agent, kw = parsed
    base = Path.cwd() if where is None else Path.cwd() / where
    return run_status(Session(cwd=base, json=json_mode, agent=agent, argv=argv), **kw)


def run_status(
    s: Session,
    *,
    fetch: bool,
    check: bool,
    max_lock_age: float | None,
    max_claim_overdue: float,
    max_unsynced: float,
    reap: bool,
) -> Any:
    """What `michi status` does, for the typer verb and the fast path alike."""
    from michi.cli import status_views
    from michi.errors import UsageError

    if reap and not check:
        raise UsageError("--reap works with --check", hint="run 'michi status --check --reap'")
    status_views.register(s.json)
    if not check:
        from michi.commands import status

        return status_views.done(status.collect(s, fetch=fetch))
    from michi.commands import status_check

    limits = status_check.Limits(
        max_lock_age=s.config.lock_ttl if max_lock_age is None else max_lock_age,
        max_claim_overdue=max_claim_overdue,
        max_unsynced=max_unsynced,
    )
    return status_views.done(status_check.check(s, limits, fetch=fetch, reap=reap))
