"""`michi lock ...` verbs: parse, call the command, hand its result to the renderer (ADR 0002)."""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING, Annotated, Any

import typer

from michi.cli import render
from michi.cli.options import Wait, session
from michi.commands.lock_info import Stats, Status
from michi.commands.lock_manual import Acquired, Released, Renewed
from michi.results import Result

if TYPE_CHECKING:
    from michi.session import Session


def _lease(value: float | None) -> float | None:
    """A bad --ttl is the flag's usage error (it was `bad_config`, as if .michi.toml held it)."""
    from michi.config import MAX_TTL
    from michi.durations import as_given

    if value is not None and not 0 < value <= MAX_TTL:  # NaN too
        raise typer.BadParameter(
            f"{as_given(value)} is no lease: a lease lasts above 0 seconds, at most {MAX_TTL}"
        )
    return value


def _conflict_exit(value: int | None) -> int | None:
    if value == 0:
        raise typer.BadParameter("0 would make 'lock busy' read as success: pass 1 to 255")
    if value is not None and not 1 <= value <= 255:
        raise typer.BadParameter(f"{value} is no exit status: pass 1 to 255")
    return value


Ttl = Annotated[
    float | None,
    typer.Option(
        "--ttl",
        metavar="SECONDS",
        callback=_lease,
        help="Lease length, above 0, at most ten years (default 300, env MICHI_LOCK_TTL).",
    ),
]
Token = Annotated[
    str | None,
    typer.Option(
        "--token", metavar="TOKEN", help="The token `michi lock acquire` printed (env MICHI_LOCK_TOKEN)."
    ),
]

Remote = Annotated[
    bool,
    typer.Option(
        "--remote",
        help="The lock held on the git remote (ref refs/michi/lock), shared by every clone and machine.",
    ),
]

lock_app = typer.Typer(
    name="lock",
    help="The repo lock (.michi.lock): run commands under it, inspect it, clear a stale one.",
    no_args_is_help=True,
)


@lock_app.command(context_settings={"allow_interspersed_args": False, "ignore_unknown_options": True})
def run(
    ctx: typer.Context,
    command: Annotated[
        list[str], typer.Argument(metavar="-- COMMAND...", help="What to run under the lock.")
    ],
    wait: Wait = None,
    remote: Remote = False,
    ttl: Ttl = None,
    conflict_exit_code: Annotated[
        int | None,
        typer.Option(
            "--conflict-exit-code",
            "-E",
            metavar="N",
            callback=_conflict_exit,
            help="Exit N (1 to 255) instead of 75 when the lock could not be had, so a COMMAND's own exit "
            "75 is not taken for 'busy, never ran' (as flock -E). Not 0: busy would read as success.",
        ),
    ] = None,
) -> int:
    """Run COMMAND holding the repo lock (like flock(1)); exit with its status.

    Exit 75 (or -E N) when the lock could not be had; 127 when COMMAND was not found, 126 when it was
    found but cannot be executed (as a shell exits): it never ran.

    COMMAND runs in its own process group and the lock covers all of it: whatever it starts is stopped
    with it (on Ctrl-C, SIGTERM, loss of the lock, and when it exits), and if michi dies, nobody takes
    the lock over while any of it still runs. The lease is renewed while it runs. It gets the lock's
    token in MICHI_LOCK_TOKEN (its commits pass the pre-commit hook, and michi commands it runs work
    under this lock instead of waiting for it) and the hold's fencing token in MICHI_LOCK_FENCE.

    The lock serializes this clone only, not other clones or machines (the remote does, by refusing
    pushes that are not fast-forwards): a script that pushes rebases and retries on rejection, e.g.
    `michi lock run -- sh -c 'git pull --rebase && make && git push'`, run again (a few times, with a
    pause) while it exits non-zero because the push was rejected. The README shows the full pattern.

    With --remote, the lock is the remote's (one for every clone on every machine): the command gets
    the remote lock's fencing token in MICHI_LOCK_FENCE and is stopped (exit 75, lock_lost) if the lease
    cannot be renewed.
    """
    from michi.lock.errors import LockTimeout

    s = session(ctx)
    try:
        return _run(s, command, wait=wait, remote=remote, ttl=ttl)
    except LockTimeout as exc:  # raised only before COMMAND starts: it never ran
        if conflict_exit_code is None:
            raise
        render.fail(exc, s.json)  # the error as always, under the exit code the caller chose
        return conflict_exit_code


def _run(s: Session, command: list[str], *, wait: float | None, remote: bool, ttl: float | None) -> int:
    from michi.cli.progress import lock_waiter
    from michi.commands.lock_run import run as run_command

    if remote:
        from michi.cli import lock_remote_cli

        return lock_remote_cli.run(s, command, ttl=ttl, wait=wait)
    if ttl is not None:
        s.overrides = {**s.overrides, "lock_ttl": ttl}
    with lock_waiter(s) as on_wait:
        result = run_command(s, command, wait=wait, on_wait=on_wait)
    if result.reclaimed:
        pids = ", ".join(str(p) for p in result.reclaimed)
        why = "the last holder died or its lease ran out"
        typer.echo(f"michi: {why}; ended what its command left running (PID {pids})", err=True)
    if result.ended:
        pids = ", ".join(str(p) for p in result.ended)
        typer.echo(f"michi: ended what the command left running in its process group (PID {pids})", err=True)
    if result.signal is not None:
        from michi.lock.errors import CommandSignalled

        # Its 128 + N alone read as michi's own Ctrl-C ("interrupted", 130) or, for SIGTERM, said nothing.
        raise CommandSignalled(result.signal, shlex.join(command))
    return result.exit_code


@lock_app.command()
def acquire(
    ctx: typer.Context,
    ttl: Ttl = None,
    pid: Annotated[
        int | None,
        typer.Option("--pid", metavar="PID", help="Holder to record (default: the calling script)."),
    ] = None,
    wait: Wait = None,
    remote: Remote = False,
    export: Annotated[
        bool,
        typer.Option("--export", help="Print `export MICHI_LOCK_TOKEN=... MICHI_LOCK_FENCE=...` for eval."),
    ] = False,
) -> Result:
    """Take the lock for a script spanning several commands; print the token that releases it.

    The holder is the script that called michi: michi's parent, or past subshells and wrappers
    (`$(...)`, pipelines, `||`, `timeout`) the script itself, so `token=$(michi lock acquire)` works and
    the lock is stale as soon as the script dies. Commits by the holder and its children pass the
    pre-commit hook. With `eval "$(michi lock acquire --export)"` the token is in MICHI_LOCK_TOKEN:
    michi commands the script runs then work under its lock, and `michi lock release` needs no --token.
    With --remote the script must renew within the TTL (`lock renew --remote`); --json also gives its
    fence.
    """
    from michi.cli.progress import lock_waiter
    from michi.commands.lock_manual import acquire as acquire_command

    s = session(ctx)
    if remote:
        from michi.cli import lock_remote_cli

        return lock_remote_cli.acquire(s, ttl=ttl, pid=pid, wait=wait)
    with lock_waiter(s) as on_wait:
        return acquire_command(s, ttl=ttl, pid=pid, wait=wait, export=export, on_wait=on_wait)


@lock_app.command()
def release(
    ctx: typer.Context,
    token: Token = None,
    force: Annotated[bool, typer.Option("--force", help="Remove a stale lock whoever holds it.")] = False,
    yes: Annotated[bool, typer.Option("--yes", help="With --force: remove even a live lock.")] = False,
    remote: Remote = False,
) -> Result:
    """Release the lock held with TOKEN; --force clears a stale lock (a live one only with --yes).

    Exit 4 `lock_lost` when the lock TOKEN held was taken over or cleared meanwhile: what ran after that
    was not serialized. --force removes whatever is in .michi.lock/, without following links.
    """
    if remote:
        from michi.commands import lock_remote

        return lock_remote.release(session(ctx), token=token, force=force, yes=yes)
    from michi.commands.lock_manual import release as release_command

    return release_command(session(ctx), token=token, force=force, yes=yes)


@lock_app.command()
def renew(ctx: typer.Context, token: Token = None, ttl: Ttl = None, remote: Remote = False) -> Result:
    """Extend the lease of the lock held with TOKEN (scripts that run longer than the TTL).

    Exit 4 `lock_lost` when the lock was taken over meanwhile."""
    if remote:
        from michi.commands import lock_remote

        return lock_remote.renew(session(ctx), token=token, ttl=ttl)
    from michi.commands.lock_manual import renew as renew_command

    return renew_command(session(ctx), token=token, ttl=ttl)


@lock_app.command()
def status(ctx: typer.Context, remote: Remote = False) -> Result:
    """Who holds the lock, for how long, whether it is stale and why, and who waits."""
    if remote:
        from michi.cli import lock_remote_cli
        from michi.commands import lock_remote

        _ = lock_remote_cli  # registers how a remote status looks
        return lock_remote.status(session(ctx))
    from michi.commands.lock_info import status as status_command

    return status_command(session(ctx))


@lock_app.command()
def stats(ctx: typer.Context) -> Result:
    """Acquisitions, contention, wait and hold times, takeovers, from this clone's lock event log."""
    from michi.commands.lock_info import stats as stats_command

    return stats_command(session(ctx))


def _ms(seconds: Any) -> str:
    return "-" if seconds is None else f"{float(seconds) * 1000:.1f} ms"


@render.human.register(Status)
def _status(result: Status) -> str:
    data = result.state.to_json()
    if not data["held"]:
        waiting = f"; {len(data['waiters'])} waiting" if data["waiters"] else ""
        return f"the repo lock is free{waiting} (last fence {data['last_fence']})"
    holder = data["holder"]
    lines = [f"lock     {data['lock']}"]
    if holder is None:
        lines.append("holder   (no readable owner record)")
    else:
        lines.append(f"holder   PID {holder['pid']} on {holder['host']}, agent {holder['agent'] or '-'}")
        lines.append(f"command  {holder['command']}")
        lines.append(f"age      {holder['age']:.1f}s")
        left = data["time_left"]
        lines.append("expires  never" if left is None else f"expires  in {left:.1f}s ({holder['expires']})")
        lines.append(f"fence    {holder['fence']}")
    state = "STALE" if data["stale"] else "live"
    lines.append(f"state    {state} ({data['reason']})")
    if data["orphans"]:
        pids = ", ".join(str(p) for p in data["orphans"])
        lines.append(f"         the holder is gone but its command still runs (PID {pids}); a taker ends it")
    lines.append(f"waiters  {', '.join(f'PID {p}' for p in data['waiters']) or 'none'}")
    if data["stale"]:
        lines.append("         clear it with: michi lock release --force")
    return "\n".join(lines)


@render.human.register(Stats)
def _stats(result: Stats) -> str:
    n = result.numbers
    lines = _figures(n)
    if n.get("remote", {}).get("acquisitions"):
        lines += [
            "remote lock (--remote), from this clone:",
            *(f"  {line}" for line in _figures(n["remote"])),
        ]
    return "\n".join([*lines, f"log           {result.log}"])


def _figures(n: dict[str, Any]) -> list[str]:
    takeovers = ", ".join(f"{k} {v}" for k, v in sorted(n["takeover_reasons"].items())) or "none"
    return [
        f"acquisitions  {n['acquisitions']} ({n['contended']} contended, {n['timeouts']} timed out)",
        f"wait          median {_ms(n['wait']['median'])}, p95 {_ms(n['wait']['p95'])}",
        f"hold          median {_ms(n['hold']['median'])}, p95 {_ms(n['hold']['p95'])}",
        f"takeovers     {n['takeovers']} ({takeovers})",
    ]


# Acquired, Released and Renewed render through their summary(): the token alone, for `$(...)`.
_ = (Acquired, Released, Renewed)


def register(app: typer.Typer) -> None:
    """Add this module's verbs to the application."""
    app.add_typer(lock_app)
