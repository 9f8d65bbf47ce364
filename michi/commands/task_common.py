"""What the task commands share: the snapshot and its index (no lock), running a mutation, results."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from michi.results import Result
from michi.session import Session
from michi.tasks import serialization
from michi.tasks.index import Index, for_tree
from michi.tasks.query import view

if TYPE_CHECKING:
    from michi.workflow import Mutation, TxnOutcome


@dataclass(frozen=True)
class Snap:
    index: Index
    notes: list[str]


def age_note(synced_at: float | None, branch: str) -> str:
    if synced_at is None:
        return f"tasks as on the local branch {branch} (never synced with a remote; --fetch to refresh)"
    age = max(0.0, time.time() - synced_at)
    shown = f"{age:.0f}s" if age < 120 else f"{age / 60:.0f} min" if age < 7200 else f"{age / 3600:.1f} h"
    return f"tasks as of the last sync {shown} ago (--fetch to refresh)"


def read(session: Session, fetch: bool = False) -> Snap:
    """The task branch as last synced: no lock, no network unless `fetch`."""
    from michi.workflow import read_snapshot

    snap = read_snapshot(session.repo, session.config, fetch=fetch)
    index = for_tree(snap, session.repo.state_dir)
    notes = [age_note(snap.synced_at, snap.branch)]
    if index.problems:
        notes.append(f"{len(index.problems)} task file(s) could not be read; 'michi doctor' lists them")
    return Snap(index, notes)


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
class TaskList(Result):
    """Several tasks: its JSON is an array of task shapes."""

    tasks: list[dict[str, Any]]
    notes: list[str] = field(default_factory=list)
    title: str = "tasks"

    def to_json(self) -> Any:
        return self.tasks


@dataclass(frozen=True)
class Changed(Result):
    """A changing command over several tasks (reap, import): the tasks and the transaction."""

    tasks: list[dict[str, Any]]
    txn: dict[str, Any]
    report: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> Any:
        return {"tasks": self.tasks, **self.report, "transaction": self.txn}
