"""`michi task ...`: add, list and work tasks; claims for agents.

Command modules are imported inside each verb (ADR 0002); so are the result views, registered on first use.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer

from michi.cli.options import Domain, Every, Fetch, IfVersion, Offline, Ref, Ttl, Wait, session

task_app = typer.Typer(
    name="task",
    help="Add, list and work tasks; claims for agents.",
    no_args_is_help=True,
    rich_markup_mode=None,
)


def _done(result: Any) -> Any:
    """Notes to stderr, views registered (task_views.done)."""
    from michi.cli import task_views

    return task_views.done(result)


@task_app.command("add")
def add(
    ctx: typer.Context,
    description: Annotated[str, typer.Argument(help="What needs doing.")],
    priority: Annotated[str | None, typer.Option("--priority", "-p", help="H, M or L.")] = None,
    tag: Annotated[list[str] | None, typer.Option("--tag", "-t", help="A tag (repeatable).")] = None,
    project: Annotated[str | None, typer.Option("--project", help="Project name (Taskwarrior's).")] = None,
    depends: Annotated[
        list[str] | None, typer.Option("--depends", metavar="ID", help="Blocked by ID.")
    ] = None,
    domain: Domain = None,
    wait: Wait = None,
    offline: Offline = False,
) -> Any:
    """Add a task; prints it with its new id."""
    from michi.commands import task_add

    return _done(
        task_add.run(
            session(ctx),
            description,
            prio=priority,
            tags=tag or [],
            project=project,
            depends=depends or [],
            domain=domain,
            wait=wait,
            offline=offline,
        )
    )


@task_app.command("list")
def list_(
    ctx: typer.Context,
    every: Every = False,
    domain: Domain = None,
    state: Annotated[
        list[str] | None,
        typer.Option("--state", help="todo, in_progress, review, done, deleted, open (default), any."),
    ] = None,
    tag: Annotated[
        list[str] | None, typer.Option("--tag", "-t", help="Only tasks with this tag (repeatable).")
    ] = None,
    project: Annotated[
        str | None, typer.Option("--project", help="Only this project (and its subprojects).")
    ] = None,
    assignee: Annotated[
        str | None, typer.Option("--assignee", help="Only tasks assigned to this agent.")
    ] = None,
    ready: Annotated[bool, typer.Option("--ready", help="Only tasks an agent could claim now.")] = False,
    fetch: Fetch = False,
) -> Any:
    """List tasks (open ones of the current domain by default). No lock, no network unless --fetch."""
    from michi.commands import task_read

    return _done(
        task_read.list_tasks(
            session(ctx),
            every_domain=every,
            domain=domain,
            state=state or [],
            tags=tag or [],
            project=project,
            assignee=assignee,
            ready=ready,
            fetch=fetch,
        )
    )


@task_app.command("show")
def show(ctx: typer.Context, ref: Ref, fetch: Fetch = False) -> Any:
    """Show one task."""
    from michi.commands import task_read

    return _done(task_read.show(session(ctx), ref, fetch))


def _simple(action: str, doc: str) -> None:
    def verb(
        ctx: typer.Context,
        ref: Ref,
        if_version: IfVersion = None,
        wait: Wait = None,
        offline: Offline = False,
    ) -> Any:
        from michi.commands import task_change

        return _done(
            task_change.change(session(ctx), action, ref, wait=wait, offline=offline, if_version=if_version)
        )

    verb.__doc__ = doc
    task_app.command(action)(verb)


_simple("start", "Start a task (state in_progress).")
_simple("stop", "Stop a task (back to todo).")
_simple("review", "Hand a task over for review.")
_simple("done", "Mark a task done.")
_simple("delete", "Delete a task (kept as status deleted; its id is never reused).")


@task_app.command("annotate")
def annotate(
    ctx: typer.Context,
    ref: Ref,
    text: Annotated[str, typer.Argument(help="The note.")],
    if_version: IfVersion = None,
    wait: Wait = None,
    offline: Offline = False,
) -> Any:
    """Add a note to a task."""
    from michi.commands import task_change

    return _done(
        task_change.change(
            session(ctx), "annotate", ref, wait=wait, offline=offline, if_version=if_version, text=text
        )
    )


@task_app.command("modify")
def modify(
    ctx: typer.Context,
    ref: Ref,
    description: Annotated[str | None, typer.Option("--description", help="New description.")] = None,
    priority: Annotated[str | None, typer.Option("--priority", "-p", help="H, M, L, or '' to clear.")] = None,
    project: Annotated[str | None, typer.Option("--project", help="New project, or '' to clear.")] = None,
    tag: Annotated[list[str] | None, typer.Option("--tag", "-t", help="Add a tag.")] = None,
    remove_tag: Annotated[list[str] | None, typer.Option("--remove-tag", help="Remove a tag.")] = None,
    depends: Annotated[
        list[str] | None, typer.Option("--depends", metavar="ID", help="Add a dependency.")
    ] = None,
    remove_depends: Annotated[
        list[str] | None, typer.Option("--remove-depends", metavar="ID", help="Drop one.")
    ] = None,
    if_version: IfVersion = None,
    wait: Wait = None,
    offline: Offline = False,
) -> Any:
    """Change a task's fields."""
    from michi.commands import task_change

    return _done(
        task_change.modify(
            session(ctx),
            ref,
            description=description,
            priority=priority,
            project=project,
            tags_add=tag or [],
            tags_remove=remove_tag or [],
            depends_add=depends or [],
            depends_remove=remove_depends or [],
            if_version=if_version,
            wait=wait,
            offline=offline,
        )
    )


@task_app.command("claim")
def claim(
    ctx: typer.Context,
    ref: Ref,
    ttl: Ttl = None,
    if_version: IfVersion = None,
    wait: Wait = None,
    offline: Offline = False,
) -> Any:
    """Claim a task for the agent (--agent or MICHI_AGENT): exclusive across clones."""
    from michi.commands import task_change

    s = session(ctx)
    return _done(task_change.claim(s, "claim", ref, ttl, wait=wait, offline=offline, if_version=if_version))


@task_app.command("renew")
def renew(
    ctx: typer.Context,
    ref: Ref,
    ttl: Ttl = None,
    if_version: IfVersion = None,
    wait: Wait = None,
    offline: Offline = False,
) -> Any:
    """Extend the agent's own claim."""
    from michi.commands import task_change

    s = session(ctx)
    return _done(task_change.claim(s, "renew", ref, ttl, wait=wait, offline=offline, if_version=if_version))


_simple("release", "Give back the agent's own claim (the task goes back to todo).")


@task_app.command("next")
def next_(
    ctx: typer.Context,
    claim: Annotated[
        bool, typer.Option("--claim", help="Claim it in the same transaction (for agent loops).")
    ] = False,
    every: Every = False,
    domain: Domain = None,
    ttl: Ttl = None,
    fetch: Fetch = False,
    wait: Wait = None,
    offline: Offline = False,
) -> Any:
    """The most urgent ready task; exit 3 (no_ready_task) when there is none."""
    from michi.commands import task_change, task_read

    s = session(ctx)
    if claim:
        return _done(
            task_change.next_claim(s, every_domain=every, domain=domain, ttl=ttl, wait=wait, offline=offline)
        )
    return _done(task_read.next_task(s, every_domain=every, domain=domain, fetch=fetch))


@task_app.command("reap")
def reap(ctx: typer.Context, domain: Domain = None, wait: Wait = None, offline: Offline = False) -> Any:
    """Release every expired claim (of every domain unless --domain)."""
    from michi.commands import task_change

    return _done(task_change.reap(session(ctx), domain=domain, wait=wait, offline=offline))


def register(app: typer.Typer) -> None:
    """Add this module's verbs to the application."""
    app.add_typer(task_app)
