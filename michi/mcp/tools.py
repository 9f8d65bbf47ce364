"""The MCP tools: one per verb an agent uses, each calling the same command function as the CLI.

A tool takes the CLI's options as typed arguments and returns exactly what `--json` prints; a failure is a
tool error whose text is the CLI's `{"error": {...}}` document (ADR 0011). The functions here are plain
and synchronous: `michi.mcp.server` runs them one at a time in a worker thread.
"""

from __future__ import annotations

from typing import Any

from michi.session import Session

# What an agent reads before calling a tool: what it does, when to use it, what its errors mean.
ERRORS = (
    " On failure the tool result is an error whose text is michi's JSON error document "
    '{"error": {"code": ..., "message": ..., "hint": ...}}: act on `code` (see the michi://contract '
    "resource)."
)


def task_add(
    s: Session,
    description: str,
    priority: str | None = None,
    tags: list[str] | None = None,
    project: str | None = None,
    depends: list[str] | None = None,
    domain: str | None = None,
    wait: float | None = None,
) -> Any:
    from michi.commands import task_add as cmd

    return cmd.run(
        s,
        description,
        prio=priority,
        tags=tags or [],
        project=project,
        depends=depends or [],
        domain=domain,
        wait=wait,
        offline=False,
    )


def task_list(
    s: Session,
    all_domains: bool = False,
    domain: str | None = None,
    state: list[str] | None = None,
    tags: list[str] | None = None,
    project: str | None = None,
    assignee: str | None = None,
    ready: bool = False,
    fetch: bool = False,
) -> Any:
    from michi.commands import task_read

    return task_read.list_tasks(
        s,
        every_domain=all_domains,
        domain=domain,
        state=state or [],
        tags=tags or [],
        project=project,
        assignee=assignee,
        ready=ready,
        fetch=fetch,
    )


def task_show(s: Session, id: str, fetch: bool = False) -> Any:
    from michi.commands import task_read

    return task_read.show(s, id, fetch)


def task_next(
    s: Session,
    claim: bool = False,
    all_domains: bool = False,
    domain: str | None = None,
    ttl: float | None = None,
    wait: float | None = None,
) -> Any:
    from michi.commands import task_change, task_read

    if claim:
        return task_change.next_claim(
            s, every_domain=all_domains, domain=domain, ttl=ttl, wait=wait, offline=False
        )
    return task_read.next_task(s, every_domain=all_domains, domain=domain, offline=False)


def _claim(action: str) -> Any:
    def tool(
        s: Session,
        id: str,
        ttl: float | None = None,
        if_version: int | None = None,
        wait: float | None = None,
    ) -> Any:
        from michi.commands import task_change

        return task_change.claim(s, action, id, ttl, wait=wait, offline=False, if_version=if_version)

    return tool


def _change(action: str) -> Any:
    def tool(s: Session, id: str, if_version: int | None = None, wait: float | None = None) -> Any:
        from michi.commands import task_change

        return task_change.change(s, action, id, wait=wait, offline=False, if_version=if_version)

    return tool


def task_annotate(
    s: Session, id: str, text: str, if_version: int | None = None, wait: float | None = None
) -> Any:
    from michi.commands import task_change

    return task_change.change(s, "annotate", id, wait=wait, offline=False, if_version=if_version, text=text)


def task_modify(
    s: Session,
    id: str,
    description: str | None = None,
    priority: str | None = None,
    project: str | None = None,
    add_tags: list[str] | None = None,
    remove_tags: list[str] | None = None,
    add_depends: list[str] | None = None,
    remove_depends: list[str] | None = None,
    if_version: int | None = None,
    wait: float | None = None,
) -> Any:
    from michi.commands import task_change

    return task_change.modify(
        s,
        id,
        description=description,
        priority=priority,
        project=project,
        tags_add=add_tags or [],
        tags_remove=remove_tags or [],
        depends_add=add_depends or [],
        depends_remove=remove_depends or [],
        if_version=if_version,
        wait=wait,
        offline=False,
    )


def task_log(s: Session, id: str, fetch: bool = False) -> Any:
    from michi.commands import task_log as cmd

    return cmd.run(s, id, fetch, False)


def lock_status(s: Session) -> Any:
    from michi.commands import lock_info

    return lock_info.status(s)


def sync(s: Session, wait: float | None = None) -> Any:
    from michi.commands import sync as cmd

    return cmd.run(s, wait=wait)


# What each argument means, shown to agents in the tools' input schemas.
PARAMS = {
    "id": "A task id, uuid or unique uuid prefix.",
    "description": "What needs doing (task_modify: the new description).",
    "priority": "H, M or L (task_modify: '' clears it).",
    "tags": "Tags to add (task_list: only tasks with all of these).",
    "add_tags": "Tags to add.",
    "remove_tags": "Tags to remove.",
    "project": "Project name, as Taskwarrior's (task_modify: '' clears it).",
    "depends": "Ids of tasks this one waits for.",
    "add_depends": "Ids of tasks this one should also wait for.",
    "remove_depends": "Ids to drop from what this task waits for.",
    "domain": "The domain folder (default: the repository root, or the nearest folder with .tasks/).",
    "all_domains": "Every domain, not only the current one.",
    "state": "States to list: todo, in_progress, review, done, deleted, open (default), any.",
    "assignee": "Only tasks assigned to this agent.",
    "ready": "Only tasks an agent could claim now.",
    "fetch": "Read the remote's current state first (default: the task branch as last synced).",
    "claim": "Claim the task in the same transaction (it moves to in_progress).",
    "ttl": "Claim lease in seconds (default claim_ttl, 1 h; 0 = no expiry).",
    "if_version": "Refuse (error version_mismatch) if the task changed since this version.",
    "wait": "Seconds to wait for the repo lock (default 30); error lock_busy when it runs out.",
    "text": "The note.",
}

# name -> (function, description for agents, changes tasks?)
TOOLS: dict[str, tuple[Any, str, bool]] = {
    "task_add": (
        task_add,
        "Add a task (one git transaction: committed and pushed before this returns). Returns the task "
        "with its new numeric id. priority is H, M or L; depends lists ids the task waits for.",
        True,
    ),
    "task_list": (
        task_list,
        "List tasks (open ones of the current domain by default; state may be todo, in_progress, review, "
        "done, deleted, open, any). Read-only, no lock; fetch=true reads the remote's current state first.",
        False,
    ),
    "task_show": (task_show, "One task by id, uuid or unique uuid prefix. Read-only.", False),
    "task_next": (
        task_next,
        "The most urgent ready task, from the remote's current state. With claim=true it is claimed for "
        "you in the same transaction and moves to in_progress: the call an agent makes in its work loop "
        "(claim, work, then task_done). Error no_ready_task: read its counts; open=0 means all work is "
        "finished, otherwise wait and try again.",
        True,
    ),
    "task_claim": (
        _claim("claim"),
        "Claim a task for you (exclusive across every clone and agent; it moves to in_progress). Error "
        "claimed: another agent holds it (the error names who and until when).",
        True,
    ),
    "task_renew": (_claim("renew"), "Extend your own claim's lease (ttl seconds; 0 = no expiry).", True),
    "task_release": (
        _change("release"),
        "Give back your own claim without finishing; the task returns to todo.",
        True,
    ),
    "task_start": (_change("start"), "Start a task (state in_progress).", True),
    "task_stop": (_change("stop"), "Stop a task (back to todo).", True),
    "task_review": (_change("review"), "Hand a task over for review (state review).", True),
    "task_done": (_change("done"), "Mark a task done (state done; its claim ends).", True),
    "task_annotate": (task_annotate, "Add a note to a task (what you found, what is left).", True),
    "task_modify": (
        task_modify,
        "Change a task's fields: description, priority (H, M, L, '' clears), project, tags, dependencies.",
        True,
    ),
    "task_log": (
        task_log,
        "A task's history from git: when, who (agent and host), which command, what changed, the commit. "
        "Read-only.",
        False,
    ),
    "lock_status": (
        lock_status,
        "Who holds the repo lock, for how long, and who waits. Read-only.",
        False,
    ),
    "sync": (
        sync,
        "Push pending offline work and fetch the task branch; finishes any interrupted operation.",
        True,
    ),
}
