"""Changing one task (start, stop, review, done, delete, annotate, modify, claim, renew, release), and the
pool commands `next --claim` and `reap`: each is one transaction."""

from __future__ import annotations

import contextlib
from typing import Any

from michi.commands import task_common
from michi.errors import UsageError
from michi.session import Session
from michi.tasks import claims, domains
from michi.tasks.errors import CorruptTask, NoReadyTask, TaskNotFound
from michi.tasks.index import Index


def _ttl(session: Session, ttl: float | None) -> float:
    from michi.config import MAX_TTL
    from michi.durations import as_given

    if ttl is not None and not ttl >= 0:  # NaN too; the CLI's option says so first, an MCP call here
        raise UsageError(
            f"--ttl {as_given(ttl)} is not a number >= 0", hint="pass 0 (no expiry) or more seconds"
        )
    if ttl is not None and ttl > MAX_TTL:  # the expiry must be a date a task file can hold
        raise UsageError(
            f"--ttl {as_given(ttl)} is more than ten years", hint=f"pass at most {MAX_TTL} seconds"
        )
    return session.config.claim_ttl if ttl is None else ttl


def change(
    session: Session,
    action: str,
    ref: str,
    *,
    wait: float | None,
    offline: bool,
    if_version: int | None = None,
    **fields: Any,
) -> task_common.TaskResult:
    from michi.workflow import Mutation

    if action in ("claim", "renew", "release"):
        claims.require_agent(session.resolve_agent())
    if action == "annotate" and not str(fields.get("text", "")).strip():  # a commit that says nothing
        raise UsageError("the note is empty", hint="michi task annotate ID 'what happened'")
    task_common.check_text(fields)
    snap = task_common.read(session)
    params: dict[str, Any] = {"action": action, "ref": ref, "if_version": if_version, **fields}
    # The path is a hint (the apply function reads the file fresh); a task another clone added since the
    # last sync is not in the snapshot and is resolved on the fresh tree instead.
    with contextlib.suppress(TaskNotFound):
        params["path"] = snap.index.find(ref)
    outcome = task_common.transact(session, Mutation("michi.tasks.mutations:update", params), wait, offline)
    task = task_common.views(outcome.result, snap.index)[0]
    txn = task_common.txn_info(outcome)
    if outcome.commit is None and action == "start":  # the claim's owner starting it: a no-op
        txn["notes"] = [*txn["notes"], "already in progress under your claim: nothing changed"]
    return task_common.TaskResult(task, txn, txn["notes"])


def claim(session: Session, action: str, ref: str, ttl: float | None, **kw: Any) -> task_common.TaskResult:
    return change(session, action, ref, ttl=_ttl(session, ttl), **kw)


def next_claim(
    session: Session,
    *,
    every_domain: bool,
    domain: str | None,
    ttl: float | None,
    wait: float | None,
    offline: bool,
) -> task_common.TaskResult:
    from michi.workflow import Mutation

    claims.require_agent(session.resolve_agent())
    where = None if every_domain else domains.resolve(session.repo.worktree, session.cwd, domain)
    params = {"domain": where, "ttl": _ttl(session, ttl)}
    try:
        outcome = task_common.transact(
            session, Mutation("michi.tasks.pool:next_claim", params), wait, offline
        )
    except NoReadyTask as exc:  # said on stderr too, as `next` and `list` say it
        if exc.details.get("unreadable"):
            exc.notes.append(
                f"{exc.details['unreadable']} task file(s) could not be read; 'michi doctor' lists them"
            )
        raise
    # Only dependencies need other tasks' ids: without any, the index is not read (ADR 0015).
    index = task_common.read(session).index if outcome.result[0]["record"].get("depends") else Index(None, {})
    task = {**task_common.views(outcome.result, index)[0], "urgency": outcome.result[0]["urgency"]}
    notes = outcome.notes
    name = outcome.result[0].get("name")
    if name is not None and name != str(task["id"]):  # another file has its number (ADR 0007)
        notes = [*notes, f"another task file has id {task['id']} too ('michi doctor'): name this one {name}"]
        task["id"] = name
    return task_common.TaskResult(task, task_common.txn_info(outcome), notes)


def reap(session: Session, *, domain: str | None, wait: float | None, offline: bool) -> task_common.Changed:
    """Release every expired claim: of every domain, or of `--domain` only."""
    from michi.workflow import Mutation

    where = None if domain is None else domains.resolve(session.repo.worktree, session.cwd, domain)
    outcome = task_common.transact(
        session, Mutation("michi.tasks.pool:reap", {"domain": where}), wait, offline
    )
    snap = task_common.read(session)
    return task_common.Changed(task_common.views(outcome.result, snap.index), task_common.txn_info(outcome))


def modify(
    session: Session,
    ref: str,
    *,
    description: str | None,
    priority: str | None,
    project: str | None,
    tags_add: list[str],
    tags_remove: list[str],
    depends_add: list[str],
    depends_remove: list[str],
    **kw: Any,
) -> task_common.TaskResult:
    from michi.commands.task_add import priority as parse_priority
    from michi.commands.task_add import split_refs

    if description is not None and not description.strip():
        raise UsageError("the description cannot be empty", hint="pass some text to --description")
    snap = task_common.read(session)
    known, later = split_refs(snap, depends_add)
    fields: dict[str, Any] = {
        "description": description,
        "priority": parse_priority(priority),
        "project": project,
        "tags_add": task_common.split_tags(tags_add),
        "tags_remove": task_common.split_tags(tags_remove),
        "depends_add": known,
        "depends_refs": later,
        "depends_remove": _dependencies(snap.index, ref, depends_remove),
    }
    return change(session, "modify", ref, **fields, **kw)


def _dependencies(index: Index, ref: str, refs: list[str]) -> list[str]:
    """What `--remove-depends REF...` drops from task `ref`: each REF's uuid, and REF itself when the task
    lists that very text (an old import's `zz` or `1`, no uuid at all: the way to mend it, ADR 0007)."""
    held: tuple[str, ...] = ()
    if refs:
        with contextlib.suppress(TaskNotFound, CorruptTask, UsageError):
            held = index.get(ref)[1].depends
    dropped: list[str] = []
    for each in refs:
        try:
            dropped.append(_dependency(index, each))
        except (TaskNotFound, UsageError):
            if each not in held:
                raise
        if each in held:
            dropped.append(each)
    return dropped


def _dependency(index: Index, ref: str) -> str:
    """The uuid `--remove-depends REF` drops. A full uuid is taken as it is, with no file to look up: the
    way out of a dependency on a task no file holds or none can read (`michi doctor` says so)."""
    from michi.tasks.ids import UUID_RE

    uuid = ref.strip().lower()
    return uuid if UUID_RE.match(uuid) else index.uuid_of(ref)
