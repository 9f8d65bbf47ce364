"""`michi hook ...` verbs. `michi hook run` is normally served before typer loads (see `cli.main`);
it is declared here too so `--help`, `-C` and `--json` work for it like for every verb."""

from __future__ import annotations

from typing import Annotated

import typer

from michi.cli.options import session
from michi.results import Result

hook_app = typer.Typer(
    name="hook",
    help="The git hooks: no hand-made commit while another process holds the repo lock, no push of "
    "unsynced offline work.",
    no_args_is_help=True,
)


@hook_app.command("install")
def install_cmd(ctx: typer.Context) -> Result:
    """Install michi's pre-commit and pre-push hooks (honours core.hooksPath and linked work trees).

    A hook already there is kept, chained (it runs after michi's) and restored by uninstall.
    """
    from michi.commands import hook

    return hook.install(session(ctx))


@hook_app.command("uninstall")
def uninstall_cmd(ctx: typer.Context) -> Result:
    """Remove michi's pre-commit and pre-push hooks and put back the hooks they chained, if any."""
    from michi.commands import hook

    return hook.uninstall(session(ctx))


@hook_app.command("run")
def run_cmd(
    ctx: typer.Context,
    files: Annotated[list[str] | None, typer.Argument(hidden=True)] = None,
) -> Result:
    """Check the commit being made (git runs this). Exit 0 lets it through.

    Refused (non-zero): another process holds a live repo lock (exit 75, lock_busy), the lock record is
    unreadable (exit 75, lock_corrupt), or task files in .tasks/ are changed by hand (exit 2, hand_edit;
    allow with allow_hand_edits). Let through: michi's own commits (MICHI_LOCK_TOKEN matches the lock);
    a stale lock, with a warning.
    """
    from michi.commands import hook

    return hook.run(session(ctx))


@hook_app.command("push-check")
def push_check_cmd(
    ctx: typer.Context,
    remote: Annotated[str | None, typer.Argument(help="The remote's name, as git passes it.")] = None,
    url: Annotated[str | None, typer.Argument(hidden=True)] = None,
) -> Result:
    """Check the push being made (git's pre-push hook runs this, ref lines on stdin). Exit 0 lets it through.

    Refused (exit 2, offline_unsynced): the push carries commits michi made offline and has not synced,
    whose task ids are provisional; run `michi sync` first. Let through: michi's own pushes.
    """
    import sys

    from michi.commands import hook

    lines = [] if sys.stdin is None or sys.stdin.isatty() else sys.stdin.read().splitlines()
    return hook.push_check(session(ctx), remote, lines)


def register(app: typer.Typer) -> None:
    """Add this module's verbs to the application."""
    app.add_typer(hook_app)
