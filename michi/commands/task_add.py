"""`michi task add`: parse and resolve before the lock; the id is allocated inside the transaction."""

from __future__ import annotations

from michi.commands import task_common
from michi.errors import UsageError
from michi.session import Session
from michi.tasks import domains
from michi.tasks.errors import TaskNotFound
from michi.tasks.model import PRIORITIES
from michi.unique import uuid4


def priority(value: str | None) -> str | None:
    if value is None:
        return None
    upper = value.strip().upper()
    if upper == "":
        return ""
    if upper not in PRIORITIES:
        raise UsageError(f"priority {value!r} is not one of H, M, L", hint="use H, M or L (or '' to clear)")
    return upper


def split_refs(snap: task_common.Snap, refs: list[str]) -> tuple[list[str], list[str]]:
    """Ids resolved in the snapshot (ids never change, so this is safe outside the lock); the rest are
    resolved again on the fresh tree, where a task added by another clone since the last sync is found."""
    known, later = [], []
    for ref in refs:
        try:
            known.append(snap.index.uuid_of(ref))  # one block of the id map, no record (ADR 0015)
        except TaskNotFound:
            later.append(ref)
    return known, later


def run(
    session: Session,
    description: str,
    *,
    prio: str | None,
    tags: list[str],
    project: str | None,
    depends: list[str],
    domain: str | None,
    wait: float | None,
    offline: bool,
) -> task_common.TaskResult:
    from michi.workflow import Mutation

    if not description.strip():
        raise UsageError("the description is empty", hint="michi task add 'what needs doing'")
    tags = task_common.split_tags(tags)  # `-t 'a, b'`: the blanks around a tag are no part of it
    task_common.check_text({"description": description, "project": project, "tag": tags})
    where = domains.resolve(session.repo.worktree, session.cwd, domain)
    snap = task_common.read(session)
    known, later = split_refs(snap, depends)
    params = {
        "uuid": uuid4(),
        "description": description,
        "domain": where,
        "priority": priority(prio) or None,
        "project": project or None,
        "tags": tags,
        "depends": known,
        "depends_refs": later,
        "floor": snap.index.max_id,
    }
    outcome = task_common.transact(session, Mutation("michi.tasks.create:add", params), wait, offline)
    task = task_common.views(outcome.result, snap.index)[0]
    return task_common.TaskResult(task, task_common.txn_info(outcome), outcome.notes)
