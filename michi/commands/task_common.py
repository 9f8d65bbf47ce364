"""What the task commands share: the snapshot and its index (no lock), running a mutation, results."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

from michi import __version__
from michi.durations import duration
from michi.results import Result
from michi.session import Session
from michi.tasks import serialization
from michi.tasks.index import Index, for_tree, load_checked, save_checked
from michi.tasks.query import VIEW_KEYS, compact, view
from michi.tasks.table import COLUMNS, Table, table_of

if TYPE_CHECKING:
    from michi.workflow import Mutation, TxnOutcome

# The list cache (ADR 0008): its rows are only good for the code that made them.
LIST_CACHE = "task-list.v1"
LIST_FORMAT = f"michi {__version__} list/1 {','.join(COLUMNS)} {','.join(VIEW_KEYS)}"


@dataclass(frozen=True)
class Snap:
    index: Index
    notes: list[str]


def age_note(synced_at: float | None, branch: str) -> str:
    if synced_at is None:
        return f"tasks as on the local branch {branch} (never synced with a remote; --fetch to refresh)"
    return f"tasks as of the last sync {duration(time.time() - synced_at)} ago (--fetch to refresh)"


def _notes(synced_at: float | None, branch: str, problems: int) -> list[str]:
    notes = [age_note(synced_at, branch)]
    if problems:
        notes.append(f"{problems} task file(s) could not be read; 'michi doctor' lists them")
    return notes


def read(session: Session, fetch: bool = False) -> Snap:
    """The task branch as last synced: no lock, no network unless `fetch`."""
    from michi.workflow import read_snapshot

    snap = read_snapshot(session.repo, session.config, fetch=fetch)
    index = for_tree(snap, session.repo.state_dir)
    return Snap(index, _notes(snap.synced_at, snap.branch, len(index.problems)))


def read_table(session: Session, fetch: bool = False) -> tuple[Table, list[str]]:
    """Every task in the list table (ADR 0008). While the ref read last time holds the same commit, the
    table comes from the list cache after a few file reads (no git process, no GitPython); otherwise from
    the index brought up to that commit, and the cache is rewritten for next time."""
    from michi.workflow import snapshot

    paths = session.repo
    old: Table | None = None
    try:
        form, stamp_t, problems, table = load_checked(paths.state_dir, LIST_CACHE)
        stamp = snapshot.Stamp(*stamp_t)
        if form == LIST_FORMAT and len(table) == len(COLUMNS) and len({len(c) for c in table}) == 1:
            if not fetch and snapshot.is_current(paths, session.config, stamp):
                return table, _notes(snapshot.synced_at(paths, stamp.remote), stamp.branch, problems)
            old = table
    except (TypeError, ValueError):  # no cache (None), or not one this code wrote
        pass
    snap = snapshot.read_snapshot(paths, session.config, fetch=fetch)
    index = for_tree(snap, paths.state_dir)
    table = table_of(index, old)
    problems = len(index.problems)
    if snap.stamp is not None:
        save_checked(paths.state_dir, LIST_CACHE, (LIST_FORMAT, tuple(snap.stamp), problems, table))
    return table, _notes(snap.synced_at, snap.branch, problems)


def transact(session: Session, mutation: Mutation, wait: float | None, offline: bool) -> TxnOutcome:
    from michi.workflow import TxnRequest, run_transaction

    req = TxnRequest(
        repo=session.repo,
        config=session.with_overrides(lock_wait=wait),
        command=session.command_line,
        agent=session.resolve_agent(),
        offline=offline,
    )
    return run_transaction(req, mutation)


def txn_info(outcome: TxnOutcome) -> dict[str, Any]:
    return {
        "commit": outcome.commit,
        "pushed": outcome.pushed,
        "branch": outcome.branch,
        "notes": outcome.notes,
    }


def views(records: list[dict[str, Any]], index: Index) -> list[dict[str, Any]]:
    """Task views of a transaction's result ([{path, record}]); depends become ids via `index`."""
    return [view(serialization.from_trusted(r["record"]), r["path"], index) for r in records]


@dataclass(frozen=True)
class TaskResult(Result):
    """One task: its JSON is the task shape, plus `transaction` when the command changed it."""

    task: dict[str, Any]
    txn: dict[str, Any] | None = None
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> Any:
        return {**self.task, "transaction": self.txn} if self.txn is not None else self.task


@dataclass(frozen=True)
class TaskDetail(TaskResult):
    """`show`: the task and, for people, its neighbours both ways (what it depends on, what depends on it:
    id, description and state each) and its urgency. Its JSON is the task shape alone."""

    depends_on: list[dict[str, Any]] = field(default_factory=list)
    blocks: list[dict[str, Any]] = field(default_factory=list)
    urgency: float = 0.0
    blocked: bool = False
    viewer: str | None = None


@dataclass(frozen=True)
class TaskList(Result):
    """Several tasks, in the order people and agents both see (ADR 0009): its JSON is an array of task
    shapes. The tasks come as their JSON text, as the list cache keeps them (ADR 0008): 10,000 tasks are
    joined, not rebuilt as dicts to be serialised again. `urgency` and `blocked` (one per task) are for the
    people's view, which orders and dims by them; the JSON contract leaves them out."""

    fragments: list[str]
    notes: list[str] = field(default_factory=list)
    title: str = "tasks"
    urgency: list[float] = field(default_factory=list)
    blocked: list[bool] = field(default_factory=list)
    viewer: str | None = None  # the agent that asked: people see its own claims stand out

    @classmethod
    def of(cls, tasks: list[dict[str, Any]], notes: list[str], title: str = "tasks") -> TaskList:
        return cls([compact(t) for t in tasks], notes, title)

    @cached_property
    def tasks(self) -> list[dict[str, Any]]:
        return [json.loads(f) for f in self.fragments]

    def to_json(self) -> Any:
        return self.tasks

    def json_text(self) -> str:
        """What `json.dumps(self.to_json())` gives in --json mode, without parsing the fragments."""
        return "[" + ",".join(self.fragments) + "]"


@dataclass(frozen=True)
class Changed(Result):
    """A changing command over several tasks (reap, import): the tasks and the transaction."""

    tasks: list[dict[str, Any]]
    txn: dict[str, Any]
    report: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> Any:
        return {"tasks": self.tasks, **self.report, "transaction": self.txn}
