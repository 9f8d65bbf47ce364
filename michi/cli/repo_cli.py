"""`michi init`, `michi export`, `michi import`, `michi sync`, `michi doctor`, `michi migrate`: verbs about
the whole task repository. Command modules are imported inside each verb (ADR 0002)."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from michi.cli.options import Domain, Every, Fetch, Offline, Wait, session


def _done(result: Any) -> Any:
    from michi.cli import task_views

    return task_views.done(result)


def init(
    ctx: typer.Context,
    hook: Annotated[
        bool, typer.Option("--hook", help="Also install the pre-commit and pre-push hooks.")
    ] = False,
    agents: Annotated[
        bool,
        typer.Option(
            "--agents", help="Also write michi's short section into AGENTS.md (replaced on re-run)."
        ),
    ] = False,
    wait: Wait = None,
    offline: Offline = False,
) -> Any:
    """Create the root .tasks/ domain and a .michi.toml, committed and pushed."""
    from michi.commands import init as init_cmd

    return _done(init_cmd.run(session(ctx), hook=hook, wait=wait, offline=offline, agents=agents))


def export(ctx: typer.Context, every: Every = False, domain: Domain = None, fetch: Fetch = False) -> Any:
    """Print the tasks as a JSON array that Taskwarrior's 'task import' accepts."""
    from michi.commands import interop

    return _done(interop.export(session(ctx), every_domain=every, domain=domain, fetch=fetch))


def import_(
    ctx: typer.Context,
    source: Annotated[str, typer.Argument(metavar="FILE", help="'task export' output ('-' for stdin).")],
    domain: Domain = None,
    wait: Wait = None,
    offline: Offline = False,
    force: Annotated[
        bool,
        typer.Option("--force", help="Also overwrite tasks changed in michi since the data was exported."),
    ] = False,
) -> Any:
    """Import Taskwarrior tasks, matched by uuid: add new, modify changed, skip the same.

    A task changed in michi after the data was exported (its michi_version is older) is a conflict: it is
    left alone and listed, and the command exits 4 (`import_conflict`) once the rest is imported; a record
    that cannot be imported at all (a corrupt task file in the way) exits 4 too (`import_problems`)."""
    from michi.commands import interop

    return _done(
        interop.import_file(session(ctx), source, domain=domain, wait=wait, offline=offline, force=force)
    )


def sync(ctx: typer.Context, wait: Wait = None) -> Any:
    """Push pending offline work, fetch, and bring the local task branch up to date.

    Says what became of each pending operation: offline-added tasks that got a new id (another clone
    took theirs), and operations that no longer apply (exit 4), e.g. an offline claim someone else won.
    """
    from michi.commands import sync as sync_cmd

    return _done(sync_cmd.run(session(ctx), wait=wait))


def doctor(ctx: typer.Context, fetch: Fetch = False) -> Any:
    """List task files that cannot be read, duplicate ids and other problems."""
    from michi.commands import doctor as doctor_cmd

    return _done(doctor_cmd.run(session(ctx), fetch=fetch))


def migrate(ctx: typer.Context, wait: Wait = None) -> Any:
    """Move every task file to the fan-out layout (.tasks/<2 hex>/<uuid>.json), in one commit.

    Repositories made before the fan-out layout keep their tasks in one flat .tasks/ folder, which every
    commit rewrites whole (slow at tens of thousands of tasks). This moves each file of every domain, byte
    for byte, to .tasks/<first two hex digits of its uuid>/, and marks the repository (.michi/layout) so
    new tasks go there too: one commit, made under the lock and pushed. Ids, contents and 'michi task log'
    are unchanged; your own staged, unstaged and unpushed work is left alone. Clones still on the flat
    layout keep working (both layouts are read). Running it again says there is nothing to do.

    Exit codes: 0 migrated or nothing to do, 4 a task's file exists in both layouts (migrate_clash),
    5 git or remote failure, 75 lock busy."""
    from michi.commands import migrate as migrate_cmd

    return _done(migrate_cmd.run(session(ctx), wait=wait))


def register(app: typer.Typer) -> None:
    """Add this module's verbs to the application."""
    app.command("init")(init)
    app.command("export")(export)
    app.command("import")(import_)
    app.command("sync")(sync)
    app.command("doctor")(doctor)
    app.command("migrate")(migrate)
