"""The one exit point: every run of `michi` goes through `main`, which renders results and errors once."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

from michi.errors import ExitCode, Interrupted, MichiError, UsageError


def split_json_flag(argv: Sequence[str]) -> tuple[list[str], bool]:
    """`--json` may stand anywhere before `--`; knowing it before parsing lets usage errors be JSON too.
    `--agent NAME` may too (agents write `michi task claim 3 --agent bot`): it is moved to the front,
    where the root command takes it."""
    args = list(argv)
    end = args.index("--") if "--" in args else len(args)
    head, agent = [], []
    tokens = iter(args[:end])
    for token in tokens:
        if token == "--agent":
            agent = ["--agent", next(tokens, "")]
        elif token.startswith("--agent="):
            agent = ["--agent", token.split("=", 1)[1]]
        elif token != "--json":
            head.append(token)
    json_mode = "--json" in args[:end]
    return agent + head + args[end:], json_mode


# `task list` and `task show` answer from a cache in tens of milliseconds, and typer's parsing alone costs
# ~200 ms (its pydantic-based coercion, issue 4's benchmark). Their plain spellings are parsed here and call
# the same command functions and the same renderer; anything else (help, a bad or unusual option, another
# verb) goes to typer, which stays the one definition of the command line.
_FLAGS = {"--all": "every_domain", "--ready": "ready", "--fetch": "fetch"}
_VALUES = {"--domain": "domain", "--project": "project", "--assignee": "assignee"}
_REPEATED = {"--state": "state", "--tag": "tags", "-t": "tags"}


def _plain_read(args: list[str]) -> tuple[dict[str, str | None], str, dict[str, Any]] | None:
    """(global options, verb, its keyword arguments) of a plainly spelled `task list` or `task show`."""
    root: dict[str, str | None] = {"-C": None, "--agent": None}
    while args[:1] and args[0].partition("=")[0] in root:
        name, eq, value = args[0].partition("=")
        if eq and name == "-C":  # click reads `-C=x` as the path "=x": leave such spellings to it
            return None
        if not eq:
            if len(args) < 2:
                return None
            value, args = args[1], args[1:]
        if not value or value.startswith("-") or root[name] is not None:
            return None
        root[name], args = value, args[1:]
    if args[:1] != ["task"] or len(args) < 2 or args[1] not in ("list", "show"):
        return None
    verb, rest = args[1], args[2:]
    kw: dict[str, Any] = {"fetch": False}
    if verb == "list":
        kw.update(
            every_domain=False, domain=None, state=[], tags=[], project=None, assignee=None, ready=False
        )
    positional: list[str] = []
    while rest:
        word, rest = rest[0], rest[1:]
        name, eq, value = word.partition("=") if word.startswith("--") else (word, "", "")
        if not word.startswith("-") and verb == "show":
            positional.append(word)
        elif name in _FLAGS and not eq and (verb == "list" or name == "--fetch"):
            kw[_FLAGS[name]] = True
        elif verb == "list" and (name in _VALUES or name in _REPEATED):
            if not eq:
                if not rest:
                    return None
                value, rest = rest[0], rest[1:]
            if value.startswith("-"):
                return None
            if name in _VALUES:
                kw[_VALUES[name]] = value
            else:
                kw[_REPEATED[name]].append(value)
        else:
            return None
    if verb == "show":
        if len(positional) != 1:
            return None
        kw["ref"] = positional[0]
    return root, verb, kw


def _run_plain_read(plain: tuple[dict[str, str | None], str, dict[str, Any]], json_mode: bool) -> Any:
    from pathlib import Path

    from michi.cli import task_views
    from michi.commands import task_read
    from michi.session import Session

    root, verb, kw = plain
    base = Path.cwd() if root["-C"] is None else Path.cwd() / root["-C"]
    session = Session(cwd=base, json=json_mode, agent=root["--agent"], argv=sys.argv[1:])
    if verb == "list":
        result: Any = task_read.list_tasks(session, **kw)
    else:
        result = task_read.show(session, kw["ref"], kw["fetch"])
    return task_views.done(result, json_mode)


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:2] == ["hook", "run"]:
        # The pre-commit hook runs on every commit: keep typer, rich and GitPython out of it (issue 5).
        from michi.hook.run import main as hook_main

        return hook_main(args[2:])
    args, json_mode = split_json_flag(args)
    from michi.cli import render

    try:
        plain = _plain_read(args)
        if plain is not None:
            return render.emit(_run_plain_read(plain, json_mode), json_mode)
        if "status" in args:  # a plain `michi status` skips typer too (status_fast)
            from michi.cli import status_fast

            if (fast := status_fast.parse(args)) is not None:
                return render.emit(status_fast.run(fast, json_mode, sys.argv[1:]), json_mode)
        from michi.cli.app import build_app, click_exceptions

        click = click_exceptions()

        try:
            outcome = build_app()(
                args=args, prog_name="michi", standalone_mode=False, obj={"json": json_mode}
            )
        except click.NoArgsIsHelpError as exc:
            where = exc.ctx.command_path if exc.ctx else "michi"
            if json_mode:
                raise UsageError(f"'{where}' needs a command", hint=f"see '{where} --help'") from None
            render.usage_text(exc.ctx.get_help() if exc.ctx else "")
            return ExitCode.USAGE
        except click.UsageError as exc:
            where = exc.ctx.command_path if exc.ctx else "michi"
            raise UsageError(exc.format_message(), hint=f"see '{where} --help'") from None
        except click.Abort:
            raise Interrupted("interrupted", hint="nothing was changed") from None
        if outcome == ExitCode.INTERRUPTED:  # typer turns Ctrl-C into a bare exit status
            raise Interrupted(
                "interrupted by Ctrl-C", hint="nothing half-done was left; run the command again"
            )
        if isinstance(outcome, int):  # --help, --version, or click's own exit
            return outcome
        if outcome is None:
            return ExitCode.OK
        return render.emit(outcome, json_mode)
    except MichiError as exc:
        return render.fail(exc, json_mode)
    except KeyboardInterrupt:
        return render.fail(Interrupted("interrupted by Ctrl-C", hint="run the command again"), json_mode)
    except Exception as exc:  # the last line of defence: a bug must still honour the JSON contract
        err = MichiError(f"unexpected error: {type(exc).__name__}: {exc}", hint="please report this as a bug")
        if not json_mode and "MICHI_DEBUG" in __import__("os").environ:
            raise
        return render.fail(err, json_mode)
