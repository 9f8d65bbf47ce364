"""The one exit point: every run of `michi` goes through `main`, which renders results and errors once."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from michi.errors import ExitCode, Interrupted, MichiError, UsageError


def split_json_flag(argv: Sequence[str]) -> tuple[list[str], bool]:
    """`--json` may stand anywhere before `--`; knowing it before parsing lets usage errors be JSON too."""
    args = list(argv)
    end = args.index("--") if "--" in args else len(args)
    head = [a for a in args[:end] if a != "--json"]
    return head + args[end:], len(head) != end


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:2] == ["hook", "run"]:
        # The pre-commit hook runs on every commit: keep typer, rich and GitPython out of it (issue 5).
        from michi.hook.run import main as hook_main

        return hook_main(args[2:])
    args, json_mode = split_json_flag(args)
    from michi.cli import render

    try:
        from michi.cli.app import build_app, click_exceptions

        click = click_exceptions()

        try:
            outcome = build_app()(
                args=args, prog_name="michi", standalone_mode=False, obj={"json": json_mode}
            )
        except click.NoArgsIsHelpError as exc:
            render.usage_text(exc.ctx.get_help() if exc.ctx else "")
            return ExitCode.USAGE
        except click.UsageError as exc:
            where = exc.ctx.command_path if exc.ctx else "michi"
            raise UsageError(exc.format_message(), hint=f"see '{where} --help'") from None
        except click.Abort:
            raise Interrupted("interrupted", hint="nothing was changed") from None
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
