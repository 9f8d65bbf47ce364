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
from michi.tasks.index import CACHE_NAME, Index, for_tree, light, load_checked, save_checked
from michi.tasks.query import COLUMNS, VIEW_KEYS, Table, compact, table_of, view

if TYPE_CHECKING:
    from michi.workflow import Mutation, TxnOutcome

# The list cache (ADR 0008): its rows are only good for the code (and the parsing rules) that made them.
LIST_CACHE = "task-list.v1"
LIST_FORMAT = f"michi {__version__} list/1 {CACHE_NAME} {','.join(COLUMNS)} {','.join(VIEW_KEYS)}"


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
    """The task branch as last synced: no lock, no network unless `fetch`. The index answers paths and ids
    from the small cache and reads the records only when asked (ADR 0014)."""
    from michi.workflow import read_snapshot

    snap = read_snapshot(session.repo, session.config, fetch=fetch)
    index = light(snap, session.repo.state_dir)
    return Snap(index, _notes(snap.synced_at, snap.branch, index.problem_count))


# Apply functions that read every task inside the lock: the command loads the index before it, so the
# critical section only applies the fresh commit's diff (ADR 0014).
_READS_ALL = {"michi.tasks.pool:next_claim", "michi.tasks.pool:reap", "michi.tasks.create:import_tasks"}


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
    from michi.workflow import TxnRequest, read_snapshot, run_transaction

    if mutation.apply in _READS_ALL:
        for_tree(read_snapshot(session.repo, session.config), session.repo.state_dir).tasks  # noqa: B018
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
class TaskList(Result):
    """Several tasks: its JSON is an array of task shapes. The tasks come as their JSON text, as the list
    cache keeps them (ADR 0008): 10,000 tasks are joined, not rebuilt as dicts to be serialised again."""

    fragments: list[str]
    notes: list[str] = field(default_factory=list)
    title: str = "tasks"

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
