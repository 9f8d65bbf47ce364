"""Reading tasks: the public JSON shape, list filters, readiness and urgency (what `next` picks)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from michi.tasks import serialization
from michi.tasks.domains import domain_of
from michi.tasks.index import Index
from michi.tasks.model import OPEN_STATES, Task, is_tw_date, parse_tw_date

# The --json shape of a task is a contract with agents (README, tests/test_task_json_contract.py).
VIEW_KEYS = (
    "id",
    "uuid",
    "description",
    "status",
    "state",
    "priority",
    "project",
    "tags",
    "depends",
    "assignee",
    "claim_expires",
    "version",
    "domain",
    "entry",
    "modified",
    "start",
    "end",
    "annotations",
)
PRIORITY_RANK = {"H": 0, "M": 1, "L": 2}


def view(task: Task, path: str, index: Index) -> dict[str, Any]:
    return view_record(serialization.to_record(task), path, index)


def view_record(rec: dict[str, Any], path: str, index: Index) -> dict[str, Any]:
    """The view straight from a file record: `list` at 10,000 tasks cannot afford a Task object each."""
    get = rec.get
    return {
        "id": rec["michi_id"],
        "uuid": rec["uuid"],
        "description": rec["description"],
        "status": rec["status"],
        "state": rec["michi_state"],
        "priority": get("priority"),
        "project": get("project"),
        "tags": get("tags") or [],
        "depends": index.ids_of(tuple(get("depends") or ())),
        "assignee": get("michi_assignee"),
        "claim_expires": get("michi_claim_expires"),
        "version": get("michi_version", 1),
        "domain": domain_of(path),
        "entry": rec["entry"],
        "modified": get("modified") or rec["entry"],
        "start": get("start"),
        "end": get("end"),
        "annotations": get("annotations") or [],
    }


def compact(task_view: dict[str, Any]) -> str:
    """A view as `--json` prints it; `list` keeps these in its cache and joins them (ADR 0008)."""
    return json.dumps(task_view, ensure_ascii=False, separators=(",", ":"))


# The list cache's table (ADR 0008): one list per column, tasks in id order (a list per column loads in
# about half the time of a tuple per task). What the filters look at, each task's finished JSON, then what
# a rebuild needs to reuse that JSON.
COLUMNS = ("id", "domain", "state", "tags", "project", "assignee", "json", "path", "oid", "deps")
Table = tuple[list[Any], ...]


def table_of(index: Index, old: Table | None) -> Table:
    """Every task of `index` in the table. A task's JSON is reused when its blob is unchanged, unless it has
    depends: those show other tasks' ids, which only this index can tell."""
    reuse = {} if old is None else {path: i for i, path in enumerate(old[7])}
    rows: list[tuple[Any, ...]] = []
    for path, (oid, rec, _problem) in index.entries.items():
        if rec is None:
            continue
        i = reuse.get(path)
        if old is not None and i is not None and old[8][i] == oid and not old[9][i]:
            rows.append(tuple(column[i] for column in old))
            continue
        get = rec.get
        rows.append(
            (
                rec["michi_id"],
                domain_of(path),
                rec["michi_state"],
                tuple(get("tags") or ()),
                get("project"),
                get("michi_assignee"),
                compact(view_record(rec, path, index)),
                path,
                oid,
                bool(get("depends")),
            )
        )
    rows.sort(key=lambda row: int(row[0]))  # as `select`: by id, ties in index order
    return tuple([row[c] for row in rows] for c in range(len(COLUMNS)))


@dataclass(frozen=True)
class Filter:
    domain: str | None = None  # None: every domain
    states: tuple[str, ...] = OPEN_STATES  # empty: every state
    tags: tuple[str, ...] = ()
    project: str | None = None
    assignee: str | None = None
    ready: bool = False

    def matches(self, path: str, rec: dict[str, Any], index: Index, now: float) -> bool:
        """On the file record (normalised, so `michi_state` is always there), before any Task is built."""
        get = rec.get
        fields = (rec["michi_state"], get("tags") or (), get("project"), get("michi_assignee"))
        if not self._plain(domain_of(path), *fields):
            return False
        return not self.ready or is_ready(index.tasks[path], index, now)

    def pick(self, table: Table) -> list[str]:
        """The JSON of the matching tasks of a list-cache table, by id. Not for `ready`: that needs other
        tasks' records, which only the index has. Domain and state, which every `list` filters on, are
        checked inline; `_plain` decides the rest (10,000 calls cost as much as the rest of the loop)."""
        assert not self.ready
        domain, states = self.domain, frozenset(self.states)
        rest = bool(self.tags or self.project or self.assignee is not None)
        out: list[str] = []
        for row in zip(*table[1:7], strict=True):
            if (domain is not None and row[0] != domain) or (states and row[1] not in states):
                continue
            if not rest or self._plain(*row[:5]):
                out.append(row[5])
        return out

    def _plain(
        self, domain: str, state: str, tags: Iterable[str], project: str | None, assignee: str | None
    ) -> bool:
        if self.domain is not None and domain != self.domain:
            return False
        if self.states and state not in self.states:
            return False
        if self.tags and not set(self.tags) <= set(tags):
            return False
        project = project or ""
        if self.project and project != self.project and not project.startswith(self.project + "."):
            return False
        return self.assignee is None or assignee == self.assignee


def deferred(task: Task, now: float) -> bool:
    """Waiting (`wait`) or scheduled (`scheduled`) until later: Taskwarrior's READY excludes both."""
    for key in ("wait", "scheduled"):
        value = task.extra.get(key)
        if isinstance(value, str) and is_tw_date(value) and parse_tw_date(value) > now:
            return True
    return False


def is_ready(task: Task, index: Index, now: float) -> bool:
    """Pending, not waiting or scheduled for later, unclaimed (or its claim expired) and every dependency
    done or deleted."""
    if task.status != "pending" or (task.extra and deferred(task, now)):
        return False
    if task.state == "in_progress":
        if not task.assignee or task.claim_holder(now) is not None:
            return False
    elif task.state != "todo":
        return False
    for dep in task.depends:
        path = index.by_uuid.get(dep)
        other = index.tasks.get(path) if path else None
        if other is None or other.state not in ("done", "deleted"):
            return False
    return True


def urgency_key(task: Task) -> tuple[int, str, int]:
    """Most urgent first: priority H, M, L, none; then the oldest; then the lowest id."""
    return (PRIORITY_RANK.get(task.priority or "", 3), task.entry, task.id)


def select(index: Index, flt: Filter, now: float) -> list[tuple[str, dict[str, Any]]]:
    """(path, record) of the matching tasks, by id."""
    found = [
        (p, e[1]) for p, e in index.entries.items() if e[1] is not None and flt.matches(p, e[1], index, now)
    ]
    found.sort(key=lambda pr: int(pr[1]["michi_id"]))
    return found


def ready_order(index: Index, domain: str | None, now: float) -> Iterable[tuple[str, Task]]:
    flt = Filter(domain=domain, states=("todo", "in_progress"), ready=True)
    return sorted(
        ((p, index.tasks[p]) for p, rec in select(index, flt, now)),
        key=lambda pt: urgency_key(pt[1]),
    )
