"""The one exit point: every run of `michi` goes through `main`, which renders results and errors once."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from michi import __version__

TYPE_CHECKING = False  # not `typing`'s: `--version` and the hook import this module (ADR 0010)
if TYPE_CHECKING:
    from michi.errors import MichiError


def split_json_flag(argv: Sequence[str]) -> tuple[list[str], bool]:
    """`--json` may stand anywhere before `--`; knowing it before parsing lets usage errors be JSON too.
    `--agent NAME` may too (agents write `michi task claim 3 --agent bot`): it is moved to the front,
    where the root command takes it. `--agent` with no name after it (last, or before another option) is
    passed on as an empty name, which the root command refuses: never dropped for MICHI_AGENT's."""
    args = list(argv)
    end = args.index("--") if "--" in args else len(args)
    head, agent = [], []
    tokens = iter(args[:end])
    for token in tokens:
        if token == "--agent":
            name = next(tokens, "")
            agent = ["--agent", "" if name.startswith("--") else name]
            if name.startswith("--") and name != "--json":
                head.append(name)
        elif token.startswith("--agent="):
            agent = ["--agent", token.split("=", 1)[1]]
        elif token != "--json":
            head.append(token)
    json_mode = "--json" in args[:end]
    return agent + head + args[end:], json_mode


def version_line(as_json: bool) -> str:
    return f'{{"version": "{__version__}"}}' if as_json else f"michi {__version__}"


def interrupted(json_mode: bool) -> int:
    """What a command Ctrl-C stopped says (`interrupted`), and its exit status (130)."""
    from michi.cli import render

    return render.fail(stopped("interrupted by Ctrl-C", "run the command again"), json_mode)


def stopped(message: str, hint: str) -> MichiError:
    """`Interrupted` with `message` for Ctrl-C; `terminated` where SIGTERM or SIGHUP ended the command as
    Ctrl-C does (`michi.workflow.signals.ending_as_ctrl_c`)."""
    from michi.errors import Interrupted

    signals = sys.modules.get("michi.workflow.signals")
    signum = signals.ended_by() if signals is not None else None
    if signum is None:
        return Interrupted(message, hint=hint)
    from michi.lock.errors import terminated_by

    return terminated_by(signum, hint)


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:2] == ["hook", "run"]:
        # The pre-commit hook runs on every commit: keep typer, rich and GitPython out of it (ADR 0005).
        from michi.hook.run import main as hook_main

        return hook_main(args[2:])
    args, json_mode = split_json_flag(args)
    if args == ["--version"]:
        # Answered before typer loads (its import alone costs more than Python's start-up); the root
        # command declares --version too, for every other spelling (`michi -C x --version`).
        sys.stdout.write(version_line(json_mode) + "\n")
        return 0
    from michi.workflow.signals import ending_as_ctrl_c

    with ending_as_ctrl_c():
        return _command(args, json_mode)


def _command(args: list[str], json_mode: bool) -> int:
    from michi.cli import render
    from michi.errors import ExitCode, MichiError, StorageFailed, UsageError, unexpected

    try:
        from michi.cli.app import build_app, click_exceptions

        click = click_exceptions()

        try:
            outcome = build_app().main(
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
            raise stopped("interrupted", "nothing was changed") from None
        if outcome == ExitCode.INTERRUPTED:  # typer turns Ctrl-C into a bare exit status
            raise stopped("interrupted by Ctrl-C", "nothing half-done was left; run the command again")
        if isinstance(outcome, int):  # --help, --version, or click's own exit
            return outcome
        if outcome is None:
            return ExitCode.OK
        return render.emit(outcome, json_mode)
    except MichiError as exc:
        return render.fail(exc, json_mode)
    except KeyboardInterrupt:
        return interrupted(json_mode)
    except Exception as exc:  # the last line of defence: a bug must still honour the JSON contract
        err = unexpected(exc)  # a full or read-only disk is no bug: exit 5, `storage_failed`
        if not isinstance(err, StorageFailed) and not json_mode and "MICHI_DEBUG" in __import__("os").environ:
            raise
        return render.fail(err, json_mode)
    finally:
        signals = sys.modules.get("michi.workflow.signals")
        if signals is not None:  # its answer is out: a SIGTERM now ends nothing (`ending_as_ctrl_c`)
            signals.answered()
        repo = sys.modules.get("michi.git.repo")
        if repo is not None:  # one command per open repository (tests run many in one process)
            repo.forget()
        if signals is not None:  # a Ctrl-C after this command's change landed: the change is made
            signals.settle()
