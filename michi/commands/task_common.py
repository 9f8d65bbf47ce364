"""What the task commands share: the snapshot and its index (no lock), running a mutation, results."""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from functools import cached_property
from typing import TYPE_CHECKING, Any, NamedTuple

from michi import __version__
from michi.commands import freshness
from michi.commands.freshness import How, is_stale
from michi.errors import UsageError
from michi.plain import Plain
from michi.results import Result
from michi.session import Session
from michi.tasks import coldtable, twocore
from michi.tasks.index import (
    CACHE_NAME,
    PARSED,
    Index,
    built,
    for_tree,
    light,
    load_checked,
    save_cache,
    save_checked,
)
from michi.tasks.query import VIEW_KEYS, compact, view_record
from michi.tasks.table import COLUMNS, Table, table_of

if TYPE_CHECKING:
    from michi import config as config_mod
    from michi.workflow import Mutation, TxnOutcome


def _made_by() -> str:
    """The code a table row depends on: what parses a file into a record (`PARSED`) and the modules that
    make a record a row (all imported already on this path), stamped (`michi.codestamp`)."""
    import sys

    from michi.codestamp import stamp

    names = ("table", "viewtext", "query", "urgency", "links", "domains", "twocore", "coldtable", "laidrow")
    return PARSED + "/" + stamp(*(sys.modules[f"michi.tasks.{name}"] for name in names))


# The list cache (ADR 0008): its rows are only good for the code (and the parsing rules) that made them.
LIST_CACHE = "task-list.v1"
LIST_FORMAT = (
    f"michi {__version__} list/1 {CACHE_NAME} {','.join(COLUMNS)} {','.join(VIEW_KEYS)} {_made_by()}"
)


class Snap(Plain):
    __slots__ = ("index", "notes", "ref")

    def __init__(self, index: Index, notes: list[str], ref: str = "") -> None:
        self.index, self.notes = index, notes
        self.ref = ref  # the ref read: the remote-tracking branch, or the local one (offline work, no remote)


def _notes(age: str, problems: int) -> list[str]:
    notes = [age]
    if problems:
        notes.append(f"{problems} task file(s) could not be read; 'michi doctor' lists them")
    return notes


def read(session: Session, mode: How | bool = How.CACHED) -> Snap:
    """The task branch, fetched first as `mode` says (freshness; True: --fetch); no lock. The index
    answers paths and ids from the small cache and reads the records only when asked (ADR 0015)."""
    if isinstance(mode, bool):
        mode = How.FETCH if mode else How.CACHED
    return read_from(session, freshness.read_snapshot(session, mode), mode)


def read_from(session: Session, got: freshness.Read, mode: How) -> Snap:
    """`read` of a snapshot already read."""
    snap = got.snapshot
    index = light(snap, session.repo.state_dir)
    age = freshness.note(snap.synced_at, snap.branch, snap.remote, mode, got.fetched, got.failure)
    return Snap(index, _notes(age, index.problem_count), snap.ref)


# Apply functions that read every task inside the lock: the command loads the index before it, so the
# critical section only applies the fresh commit's diff (ADR 0015); `next --claim` does so with the ranking.
_READS_ALL = {"michi.tasks.pool:reap", "michi.tasks.create:import_tasks"}


def _adds_depends(mutation: Mutation) -> bool:
    """A change naming a dependency the snapshot did not know resolves it on the fresh tree, inside the
    lock, from every task (`mutations.resolve_refs`). (A cycle check reads only the tasks it reaches.)"""
    return mutation.apply in ("michi.tasks.mutations:update", "michi.tasks.create:add") and bool(
        mutation.params.get("depends_refs")
    )


class TableRead(NamedTuple):
    """`read_table` with what chose the commit (`stamp`; None when only git could vouch for it) and the
    number of unreadable task files: `michi status` reads the same cache and needs both."""

    table: Table
    notes: list[str]
    stamp: Any  # workflow.snapshot.Stamp | None (not imported here: the read path stays lean)
    problems: int


def read_table(session: Session, mode: How = How.AUTO) -> tuple[Table, list[str]]:
    """Every task in the list table (ADR 0008)."""
    got = read_table_stamped(session, mode)
    return got.table, got.notes


def read_table_stamped(session: Session, mode: How = How.AUTO) -> TableRead:
    """Every task in the list table (ADR 0008). While the ref read last time holds the same commit and no
    fetch is due, the table comes from the list cache after a few file reads (no git process, no
    GitPython); otherwise from the index brought up to that commit, and the cache is rewritten."""
    from michi.workflow import snapshot

    paths, config = session.repo, session.config
    old: Table | None = None
    try:
        form, stamp_t, problems, table = load_checked(paths.state_dir, LIST_CACHE)
        stamp = snapshot.Stamp(*stamp_t)
        if form == LIST_FORMAT and len(table) == len(COLUMNS) and len({len(c) for c in table}) == 1:
            synced = snapshot.synced_at(paths, stamp.remote)
            due = mode is How.FETCH or (
                mode is How.AUTO and stamp.remote is not None and is_stale(synced, config.read_max_age)
            )
            if not due and snapshot.is_current(paths, config, stamp):
                age = freshness.note(synced, stamp.branch, stamp.remote, mode, False, None)
                return TableRead(table, _notes(age, problems), stamp, problems)
            old = table
    except (TypeError, ValueError):  # no cache (None), or not one this code wrote
        pass
    got = freshness.read_snapshot(session, mode)
    snap = got.snapshot
    cold = coldtable.built(snap, paths.state_dir) if old is None else None
    if cold is not None:  # no cache at all: one child makes half of everything (ADR 0015)
        table, problems, _ = cold
    else:
        index, stale = built(snap, paths.state_dir)
        # The index cache is written while a child process makes part of the table (ADR 0015).
        table = table_of(index, old, (lambda: save_cache(paths.state_dir, index)) if stale else None)
        problems = len(index.problems)

    def save_list() -> None:
        if snap.stamp is not None:
            # Marshal version 2: the table shares its paths, oids and values with the index, and tracking
            # them for back-references made the dump ~1.7x slower; loading it costs the same (ADR 0015).
            save_checked(paths.state_dir, LIST_CACHE, (LIST_FORMAT, tuple(snap.stamp), problems, table), 2)

    if cold is None:
        save_list()
    else:  # the caches written by a child while this process orders and prints (ADR 0015)
        write_index = cold[2]

        def save_both() -> None:
            write_index()
            save_list()

        twocore.later(save_both)
    age = freshness.note(snap.synced_at, snap.branch, snap.remote, mode, got.fetched, got.failure)
    return TableRead(table, _notes(age, problems), snap.stamp, problems)


def lock_config(session: Session, wait: float | None) -> config_mod.Config:
    """The config with `--wait` over it. The CLI's option refuses a negative wait itself (`usage`); an MCP
    tool's argument meets only this check, which said `bad_config` until it said the same (ADR 0011)."""
    if wait is not None and not wait >= 0:
        from michi.durations import as_given

        raise UsageError(
            f"--wait {as_given(wait)} is not a number >= 0", hint="pass 0 (one try) or more seconds"
        )
    return session.with_overrides(lock_wait=wait)


def split_tags(values: list[str]) -> list[str]:
    """`-t a,b` is two tags, as Taskwarrior reads them; blanks dropped, first spelling kept, order kept."""
    return list(dict.fromkeys(t.strip() for v in values for t in v.split(",") if t.strip()))


# Fields that are one printable line (a name, not prose): a newline or escape in a project or tag breaks
# every table, Taskwarrior's filters and the terminal of whoever lists it.
ONE_LINE = ("project", "tag", "tags_add")  # removing a bad tag a hand edit made stays possible


def check_text(values: Mapping[str, Any]) -> None:
    """Text a task will hold (description, project, tags, a note) must be characters. Bytes that are not
    UTF-8 on a command line reach Python as lone surrogates (surrogateescape), which no task file can hold:
    refused here, before the lock, naming the value (exit 2). Projects and tags are one printable line."""
    for name, value in values.items():
        for text in value if isinstance(value, list | tuple) else (value,):
            if isinstance(text, str) and not text.isascii():
                try:
                    text.encode("utf-8")
                except UnicodeEncodeError:
                    raise UsageError(
                        f"{name.replace('_', ' ')} {text!r} is not UTF-8 text",
                        hint="pass the text in UTF-8 (check the terminal's or the script's encoding)",
                    ) from None
            if name in ONE_LINE and isinstance(text, str) and not text.isprintable():
                raise UsageError(
                    f"{name.replace('_', ' ')} {text[:80]!r} contains control or invisible characters",
                    hint="a project or tag is one line of printable text (no newline, tab or escape)",
                )


def transact(
    session: Session, mutation: Mutation, wait: float | None, offline: bool, *, save_index: bool = True
) -> TxnOutcome:
    """Run `mutation` as a transaction. `save_index=False`: the index warmed before the lock is not
    written to its cache file (an import's chunks: the read after the last chunk writes it once)."""
    from michi.tasks.domains import check_layout
    from michi.workflow import TxnRequest, read_snapshot, run_transaction

    if mutation.apply == "michi.tasks.pool:next_claim":
        from michi.tasks import rank_cache

        snapshot = read_snapshot(session.repo, session.config)
        check_layout(snapshot)  # before a rank of a layout this michi does not know (ADR 0006)
        rank_cache.for_tree(snapshot, session.repo.state_dir, time.time())  # inside the lock: the diff only
    elif mutation.apply in _READS_ALL or _adds_depends(mutation):
        snapshot = read_snapshot(session.repo, session.config)
        check_layout(snapshot)
        index = for_tree(snapshot, session.repo.state_dir, save=save_index)
        if mutation.apply == "michi.tasks.pool:reap":  # import builds a Task only for a file it changes
            index.tasks  # noqa: B018
    req = TxnRequest(
        repo=session.repo,
        config=lock_config(session, wait),
        command=session.command_line,
        agent=session.resolve_agent(),
        on_wait=session.on_wait,
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
    return [view_record(r["record"], r["path"], index) for r in records]  # records as to_record writes them


class TaskResult(Result, Plain):
    """One task: its JSON is the task shape, plus `transaction` when the command changed it."""

    __slots__ = ("notes", "task", "txn")

    def __init__(
        self, task: dict[str, Any], txn: dict[str, Any] | None = None, notes: list[str] | None = None
    ) -> None:
        self.task, self.txn = task, txn
        self.notes = [] if notes is None else notes

    def to_json(self) -> Any:
        return {**self.task, "transaction": self.txn} if self.txn is not None else self.task


class TaskDetail(TaskResult):
    """`show`: the task and, for people, its neighbours both ways (what it depends on, what depends on it:
    id, description and state each) and its urgency. Its JSON is the task shape alone."""

    __slots__ = ("blocked", "blocks", "depends_on", "urgency", "viewer")

    def __init__(
        self,
        task: dict[str, Any],
        txn: dict[str, Any] | None = None,
        notes: list[str] | None = None,
        depends_on: list[dict[str, Any]] | None = None,
        blocks: list[dict[str, Any]] | None = None,
        urgency: float = 0.0,
        blocked: bool = False,
        viewer: str | None = None,
    ) -> None:
        super().__init__(task, txn, notes)
        self.depends_on = [] if depends_on is None else depends_on
        self.blocks = [] if blocks is None else blocks
        self.urgency, self.blocked, self.viewer = urgency, blocked, viewer


class TaskList(Result, Plain):
    """Several tasks, in the order people and agents both see (ADR 0014): its JSON is an array of task
    shapes. The tasks come as their JSON text, as the list cache keeps them (ADR 0008): 10,000 tasks are
    joined, not rebuilt as dicts to be serialised again. `urgency` and `blocked` (one per task) are for the
    people's view, which orders and dims by them; the JSON contract leaves them out."""

    __slots__ = ("blocked", "fragments", "notes", "title", "urgency", "viewer")

    def __init__(
        self,
        fragments: list[str],
        notes: list[str] | None = None,
        title: str = "tasks",
        urgency: list[float] | None = None,
        blocked: list[bool] | None = None,
        viewer: str | None = None,
    ) -> None:
        self.fragments, self.title = fragments, title
        self.notes = [] if notes is None else notes
        self.urgency = [] if urgency is None else urgency
        self.blocked = [] if blocked is None else blocked
        self.viewer = viewer  # the agent that asked: people see its own claims stand out

    @classmethod
    def of(cls, tasks: list[dict[str, Any]], notes: list[str], title: str = "tasks") -> TaskList:
        return cls([compact(t) for t in tasks], notes, title)

    @cached_property
    def tasks(self) -> list[dict[str, Any]]:
        return [json.loads(f) for f in self.fragments]

    def to_json(self) -> Any:
        return self.tasks

    def json_text(self) -> str:
        """What `json.dumps(self.to_json())` gives in --json mode, without parsing the fragments (one
        copy of the text less than `"[" + ... + "]"`: 17 MB at 50,000 tasks)."""
        return f"[{','.join(self.fragments)}]"


class Changed(Result, Plain):
    """A changing command over several tasks (reap, import): the tasks and the transaction. The tasks are
    view dicts, or (`fragments`) each one's `--json` text, parsed only when asked for (an import prints
    50,000 of them: `viewtext` writes each from its record, ADR 0015)."""

    __slots__ = ("_tasks", "fragments", "notes", "report", "txn")

    def __init__(
        self,
        tasks: list[dict[str, Any]] | None,
        txn: dict[str, Any],
        report: dict[str, Any] | None = None,
        notes: list[str] | None = None,
        fragments: list[str] | None = None,
    ) -> None:
        self._tasks, self.fragments, self.txn = tasks, fragments, txn
        self.report = {} if report is None else report
        self.notes = [] if notes is None else notes

    @property
    def tasks(self) -> list[dict[str, Any]]:
        if self._tasks is None:
            self._tasks = [json.loads(f) for f in self.fragments or ()]
        return self._tasks

    def to_json(self) -> Any:
        return {"tasks": self.tasks, **self.report, "transaction": self.txn}

    def json_text(self) -> str:
        """What `--json` prints (`json.dumps(self.to_json())`), the tasks joined from their fragments."""
        if self.fragments is None:
            return json.dumps(self.to_json(), ensure_ascii=False, separators=(",", ":"))
        rest = json.dumps({**self.report, "transaction": self.txn}, ensure_ascii=False, separators=(",", ":"))
        return '{"tasks":[' + ",".join(self.fragments) + "]," + rest[1:]
