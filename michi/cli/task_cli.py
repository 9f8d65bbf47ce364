"""`michi task ...`: add, list and work tasks; claims for agents.

Command modules are imported inside each verb (ADR 0002); so are the result views, registered on first use.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer

from michi.cli.options import Domain, Every, Fetch, IfVersion, NoFetch, Offline, Ref, Ttl, Wait, session

task_app = typer.Typer(
    name="task",
    help="Add, list and work tasks; claims for agents (agents: read 'michi guide' first).",
    no_args_is_help=True,
    rich_markup_mode=None,
)


def _done(result: Any, *, wide: bool = False, no_color: bool = False) -> Any:
    """Notes to stderr, views registered for a person's output (task_views.done)."""
    from michi.cli import task_views

    return task_views.done(result, wide=wide, no_color=no_color)


Sort = Annotated[
    str | None,
    typer.Option(
        "--sort",
        metavar="FIELD[,FIELD]",
        help="Order by urgency (the default: most urgent first, as 'task next' picks), id, entry, "
        "modified, priority (H first), project or state; -FIELD reverses one. --json follows it too.",
    ),
]
Wide = Annotated[
    bool, typer.Option("--wide", help="Show descriptions whole (wrapped) instead of cut to fit the terminal.")
]
NoColor = Annotated[
    bool,
    typer.Option("--no-color", help="Plain text (as with NO_COLOR set, or when stdout is not a terminal)."),
]


@task_app.command("add")
def add(
    ctx: typer.Context,
    description: Annotated[str, typer.Argument(metavar="TEXT", help="What needs doing.")],
    priority: Annotated[
        str | None, typer.Option("--priority", "-p", metavar="H|M|L", help="Priority: H, M or L.")
    ] = None,
    tag: Annotated[
        list[str] | None,
        typer.Option("--tag", "-t", metavar="TAG", help="A tag (repeatable; -t a,b gives two tags)."),
    ] = None,
    project: Annotated[
        str | None, typer.Option("--project", metavar="NAME", help="Project name (Taskwarrior's).")
    ] = None,
    depends: Annotated[
        list[str] | None,
        typer.Option("--depends", metavar="ID", help="Blocked until task ID is done (repeatable)."),
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
        typer.Option(
            "--state",
            metavar="STATE",
            help="todo, in_progress, review, done, deleted, open (default), any (repeatable).",
        ),
    ] = None,
    tag: Annotated[
        list[str] | None,
        typer.Option(
            "--tag", "-t", metavar="TAG", help="Only tasks with this tag (repeatable; a,b: both tags)."
        ),
    ] = None,
    project: Annotated[
        str | None,
        typer.Option("--project", metavar="NAME", help="Only this project (and its subprojects)."),
    ] = None,
    assignee: Annotated[
        str | None, typer.Option("--assignee", metavar="AGENT", help="Only tasks assigned to this agent.")
    ] = None,
    ready: Annotated[bool, typer.Option("--ready", help="Only tasks an agent could claim now.")] = False,
    sort: Sort = None,
    wide: Wide = False,
    no_color: NoColor = False,
    fetch: Fetch = False,
    no_fetch: NoFetch = False,
) -> Any:
    """List tasks, most urgent first (open ones of the current domain by default).

    No lock; fetches only when the last sync is older than read_max_age (stderr says how old the answer
    is). Empty columns are left out; descriptions are cut to fit the terminal ([2]: two annotations);
    blocked tasks are dimmed. The last line counts what is listed.
    """
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
            no_fetch=no_fetch,
            sort=sort,
        ),
        wide=wide,
        no_color=no_color,
    )


@task_app.command("show")
def show(
    ctx: typer.Context, ref: Ref, no_color: NoColor = False, fetch: Fetch = False, no_fetch: NoFetch = False
) -> Any:
    """Show one task: what, state and claim, dates, dependencies both ways, annotations, history.

    Fetches first when the last sync is older than read_max_age."""
    from michi.commands import task_read

    return _done(task_read.show(session(ctx), ref, fetch, no_fetch), no_color=no_color)


@task_app.command("log")
def log(ctx: typer.Context, ref: Ref, fetch: Fetch = False, no_fetch: NoFetch = False) -> Any:
    """A task's history from git: when, who (agent and host), which command, what changed, the commit."""
    from michi.commands import task_log

    return _done(task_log.run(session(ctx), ref, fetch, no_fetch))


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


_simple(
    "start",
    "Start a task (state in_progress). Starting a task you hold a claim on is a no-op (exit 0): "
    "the claim already started it.",
)
_simple("stop", "Stop a task (back to todo).")
_simple("review", "Hand a task over for review.")
_simple("done", "Mark a task done.")
_simple("delete", "Delete a task (kept as status deleted; its id is never reused).")


@task_app.command("annotate")
def annotate(
    ctx: typer.Context,
    ref: Ref,
    text: Annotated[str, typer.Argument(metavar="TEXT", help="The note.")],
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
    description: Annotated[
        str | None, typer.Option("--description", metavar="TEXT", help="New description.")
    ] = None,
    priority: Annotated[
        str | None, typer.Option("--priority", "-p", metavar="H|M|L", help="H, M, L, or '' to clear.")
    ] = None,
    project: Annotated[
        str | None, typer.Option("--project", metavar="NAME", help="New project, or '' to clear.")
    ] = None,
    tag: Annotated[
        list[str] | None,
        typer.Option("--tag", "-t", metavar="TAG", help="Add a tag (repeatable; a,b adds two)."),
    ] = None,
    remove_tag: Annotated[
        list[str] | None,
        typer.Option("--remove-tag", metavar="TAG", help="Remove a tag (repeatable; a,b removes two)."),
    ] = None,
    depends: Annotated[
        list[str] | None, typer.Option("--depends", metavar="ID", help="Add a dependency (repeatable).")
    ] = None,
    remove_depends: Annotated[
        list[str] | None,
        typer.Option("--remove-depends", metavar="ID", help="Drop a dependency (repeatable)."),
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
    """Claim a task for the agent (--agent or MICHI_AGENT): exclusive across clones. The claim moves the
    task to in_progress (no separate start needed); finish with 'michi task done ID'. It lasts --ttl
    seconds; renew it while working, or others may take the task over when it expires."""
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
        bool,
        typer.Option(
            "--claim",
            help="Claim it in the same transaction: it moves to in_progress, assigned to you (agent loops).",
        ),
    ] = False,
    every: Every = False,
    domain: Domain = None,
    ttl: Ttl = None,
    _fetch: Annotated[
        bool, typer.Option("--fetch", hidden=True, help="Always on (kept for scripts).")
    ] = False,
    wait: Wait = None,
    offline: Annotated[
        bool,
        typer.Option(
            "--offline",
            help="Do not contact the remote: answer from the last sync (with --claim: commit locally; "
            "'michi sync' pushes it later).",
        ),
    ] = False,
) -> Any:
    """The most urgent ready task (Taskwarrior's urgency, in the JSON as `urgency`) of the remote's
    current state: fetches first. Exit 3 (no_ready_task) when there is none; its counts say why, and
    `open: 0` means all work is finished, `open` equal to `stuck` that only a person can free the rest."""
    from michi.commands import task_change, task_read

    s = session(ctx)
    if claim:
        return _done(
            task_change.next_claim(s, every_domain=every, domain=domain, ttl=ttl, wait=wait, offline=offline)
        )
    return _done(task_read.next_task(s, every_domain=every, domain=domain, offline=offline))


@task_app.command("reap")
def reap(ctx: typer.Context, domain: Domain = None, wait: Wait = None, offline: Offline = False) -> Any:
    """Release every expired claim (of every domain unless --domain)."""
    from michi.commands import task_change

    return _done(task_change.reap(session(ctx), domain=domain, wait=wait, offline=offline))


def register(app: typer.Typer) -> None:
    """Add this module's verbs to the application."""
    app.add_typer(task_app)
