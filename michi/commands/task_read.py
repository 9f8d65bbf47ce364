"""Read-only task commands: `list`, `show`, `next` (without --claim). No lock; how fresh each answer is
(and when it fetches) is `freshness`'s job (ADR 0008)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager

from michi.commands import freshness, task_common
from michi.commands.freshness import How
from michi.errors import MichiError, UsageError
from michi.session import Session
from michi.tasks import backlog, domains, rank_cache, urgency
from michi.tasks import order as task_order
from michi.tasks.links import Links, neighbours
from michi.tasks.model import OPEN_STATES, STATES
from michi.tasks.query import Filter, select, view
from michi.tasks.table import BLOCKED, COL, table_for


def states(wanted: list[str]) -> tuple[str, ...]:
    """--state values: the states named; 'open' (the default) and 'any' (every state) as shorthands."""
    if not wanted:
        return OPEN_STATES
    out: list[str] = []
    for value in wanted:
        if value == "any":
            return ()
        if value == "open":
            out += OPEN_STATES
        elif value in STATES:
            out.append(value)
        else:
            raise UsageError(f"unknown state {value!r}", hint=f"one of {', '.join(STATES)}, open, any")
    return tuple(dict.fromkeys(out))


def list_tasks(
    session: Session,
    *,
    every_domain: bool,
    domain: str | None,
    state: list[str],
    tags: list[str],
    project: str | None,
    assignee: str | None,
    ready: bool,
    fetch: bool,
    no_fetch: bool = False,
    sort: str | None = None,
) -> task_common.TaskList:
    """The matching tasks, most urgent first unless `sort` (`--sort`) says otherwise (ADR 0014)."""
    order = task_order.parse(sort)  # a bad --sort fails before any reading
    mode = freshness.how(fetch, no_fetch)
    where = None if every_domain else domains.resolve(session.repo.worktree, session.cwd, domain)
    flt = Filter(where, states(state), tuple(task_common.split_tags(tags)), project, assignee, ready)
    title = "tasks in every domain" if where is None else f"tasks in domain {where}"
    now = time.time()
    if not ready:  # readiness looks at other tasks' records: only the index has them
        table, notes = task_common.read_table(session, mode)
        rows = flt.pick(table)
    else:
        snap = task_common.read(session, mode)
        table, notes = table_for(snap.index, select(snap.index, flt, now)), snap.notes
        rows = list(range(len(table[0])))
    rows, urgencies = task_order.arrange(table, rows, order, now)
    text, flags = table[COL["json"]], table[COL["flags"]]
    blocked = [bool(flags[i] & BLOCKED) for i in rows]
    viewer = session.resolve_agent()
    return task_common.TaskList([text[i] for i in rows], notes, title, urgencies, blocked, viewer)


def show(session: Session, ref: str, fetch: bool, no_fetch: bool = False) -> task_common.TaskDetail:
    """One task, with what it depends on and what depends on it."""
    snap = task_common.read(session, freshness.how(fetch, no_fetch))
    index = snap.index
    with noted(snap.notes):
        path, task = index.get(ref)
    depends_on, blocks = neighbours(index, task)
    rec = index.entries[path][1] or {}
    blocked, blocking = Links(index).of(rec)
    urg = urgency.at(urgency.terms(rec, blocked=blocked, blocking=blocking), time.time())
    return task_common.TaskDetail(
        view(task, path, index),
        notes=snap.notes,
        depends_on=depends_on,
        blocks=blocks,
        urgency=urg,
        blocked=blocked,
        viewer=session.resolve_agent(),
    )


def next_task(
    session: Session, *, every_domain: bool, domain: str | None, offline: bool
) -> task_common.TaskResult:
    """The most urgent ready task of the remote's current state (fetched first unless `offline`)."""
    where = None if every_domain else domains.resolve(session.repo.worktree, session.cwd, domain)
    got = freshness.read_snapshot(session, How.OFFLINE if offline else How.FETCH)
    now = time.time()
    snap = task_common.read_from(session, got, How.OFFLINE if offline else How.FETCH)
    picked = rank_cache.best(got.snapshot, session.repo.state_dir, where, now, True, lambda: snap.index)
    if picked is not None:
        path, task, score = picked
        return task_common.TaskResult({**view(task, path, snap.index), "urgency": score}, notes=snap.notes)
    with noted(snap.notes):
        raise backlog.no_ready(snap.index, where, session.resolve_agent(), now)


@contextmanager
def noted(notes: list[str]) -> Iterator[None]:
    """An error raised after the read still says which state it answered from."""
    try:
        yield
    except MichiError as exc:
        exc.notes = [*notes, *exc.notes]
        raise
