"""`michi hook ...` verbs. `michi hook run` is normally served before typer loads (see `cli.main`);
it is declared here too so `--help`, `-C` and `--json` work for it like for every verb."""

from __future__ import annotations

from typing import Annotated

import typer

from michi.cli.options import session
from michi.results import Result

hook_app = typer.Typer(
    name="hook",
    help="The git pre-commit hook: no hand-made commit while another process holds the repo lock.",
    no_args_is_help=True,
)


@hook_app.command("install")
def install_cmd(ctx: typer.Context) -> Result:
    """Install michi's pre-commit hook (honours core.hooksPath and linked work trees).

    A pre-commit hook already there is kept, chained (it runs after michi's) and restored by uninstall.
    """
    from michi.commands import hook

    return hook.install(session(ctx))


@hook_app.command("uninstall")
def uninstall_cmd(ctx: typer.Context) -> Result:
    """Remove michi's pre-commit hook and put back the hook it chained, if any."""
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


def register(app: typer.Typer) -> None:
    """Add this module's verbs to the application."""
    app.add_typer(hook_app)
