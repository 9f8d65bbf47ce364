"""Reading tasks: the public JSON shape, list filters, readiness and urgency (what `next` picks)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from itertools import compress, repeat
from operator import and_, eq
from typing import TYPE_CHECKING, Any

from michi.plain import Plain
from michi.tasks import serialization, urgency
from michi.tasks.domains import domain_of
from michi.tasks.index import Index
from michi.tasks.links import still_open
from michi.tasks.model import HOLDS, OPEN_STATES, OPEN_STATUSES, Task, is_tw_date, parse_tw_date

if TYPE_CHECKING:
    from michi.tasks.table import Table

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
    """A view as `--json` prints it; `list` keeps these in its cache and joins them (ADR 0008). One encoder
    for all: `json.dumps` with options builds a new one per call, and so does `JSONEncoder.encode` (its C
    part): 50,000 on a cold read (ADR 0015)."""
    return "".join(_ONE_SHOT(task_view, 0))


def _one_shot() -> Any:
    """What `JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode` runs on a dict, built once."""
    base = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))
    make = getattr(json.encoder, "c_make_encoder", None)
    slow = lambda value, _level: [base.encode(value)]  # noqa: E731  (the encoder's own one-shot path)
    if make is None:  # no C accelerator
        return slow
    try:  # a private signature: believed only while it answers as the public encoder does
        fast = make(None, base.default, json.encoder.encode_basestring, None, ":", ",", False, False, True)
        sample = {"a": [1, 2.5, None, True], "b": 'é\n"', "c": {}}
        return fast if "".join(fast(sample, 0)) == base.encode(sample) else slow
    except Exception:  # another Python's signature
        return slow


_ONE_SHOT = _one_shot()


class Filter(Plain):
    __slots__ = ("assignee", "domain", "project", "ready", "states", "tags")

    def __init__(
        self,
        domain: str | None = None,
        states: tuple[str, ...] = OPEN_STATES,
        tags: tuple[str, ...] = (),
        project: str | None = None,
        assignee: str | None = None,
        ready: bool = False,
    ) -> None:
        self.domain = domain  # None: every domain
        self.states = states  # empty: every state
        self.tags, self.project, self.assignee, self.ready = tags, project, assignee, ready

    def matches(self, path: str, rec: dict[str, Any], index: Index, now: float) -> bool:
        """On the file record (normalised, so `michi_state` is always there), before any Task is built."""
        get = rec.get
        fields = (rec["michi_state"], get("tags") or (), get("project"), get("michi_assignee"))
        if not self._plain(domain_of(path), *fields):
            return False
        return not self.ready or is_ready(index.tasks[path], index, now)

    def pick(self, table: Table) -> list[int]:
        """The rows of a list table (`michi.tasks.table`) that match, in table order. Not for `ready`: that
        needs other tasks' records, which only the index has. Domain and state alone, as every `list`
        without other filters asks, are checked in C (`compress` over `map`s, ADR 0015); otherwise
        `_plain` decides (10,000 calls cost as much as the whole loop)."""
        assert not self.ready
        if self.tags or self.project or self.assignee is not None:
            plain = self._plain  # which checks domain and state too
            return [i for i, row in enumerate(zip(*table[1:6], strict=True)) if plain(*row)]
        domain, states, count = self.domain, frozenset(self.states), len(table[0])
        tests: list[Iterator[bool]] = []
        if domain is not None:
            tests.append(map(eq, table[1], repeat(domain, count)))
        if states:
            tests.append(map(states.__contains__, table[2]))
        if not tests:
            return list(range(count))
        return list(compress(range(count), tests[0] if len(tests) == 1 else map(and_, *tests)))

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
    """Waiting (`wait`) or scheduled (`scheduled`) until later: Taskwarrior's READY excludes both. One
    that is no date holds the task back for good (`model.HOLDS`)."""
    for key in HOLDS:
        value = task.extra.get(key)
        if value is not None and (not is_tw_date(value) or parse_tw_date(value) > now):
            return True
    return False


def is_ready(task: Task, index: Index, now: float) -> bool:
    """Pending (or `waiting`: its `wait` decides, as for a pending task), not waiting or scheduled for
    later, unclaimed (or its claim expired) and every dependency done or deleted. A status that says
    finished holds back a task michi_state calls open (`model.split`, ADR 0007)."""
    if task.status not in OPEN_STATUSES or (task.extra and deferred(task, now)):
        return False
    if task.state == "in_progress":
        if not task.assignee or task.claim_holder(now) is not None:
            return False
    elif task.state != "todo":
        return False
    for dep in task.depends:
        path = index.by_uuid.get(dep)
        other = index.tasks.get(path) if path else None
        if other is None or still_open(other.state):  # what `list` shows as blocked (`links`)
            return False
    return True


def select(index: Index, flt: Filter, now: float) -> list[tuple[str, dict[str, Any]]]:
    """(path, record) of the matching tasks, by id."""
    found = [
        (p, e[1]) for p, e in index.entries.items() if e[1] is not None and flt.matches(p, e[1], index, now)
    ]
    found.sort(key=lambda pr: int(pr[1]["michi_id"]))
    return found


def ready_order(index: Index, domain: str | None, now: float) -> list[tuple[str, Task, float]]:
    """The ready tasks with their urgency, most urgent first (Taskwarrior's urgency, as `task next`
    orders); ties go to the oldest, then the lowest id."""
    depended = depended_on(index)  # builds every Task once (index.tasks); readiness reuses them
    scored = []
    for path, task in index.tasks.items():
        if (domain is None or domain_of(path) == domain) and is_ready(task, index, now):
            scored.append((path, task, urgency.urgency(task, now, blocking=task.uuid in depended)))
    scored.sort(key=_rank)
    return scored


def _rank(ptu: tuple[str, Task, float]) -> tuple[float, str, int]:
    return (-ptu[2], ptu[1].entry, ptu[1].id)


def urgencies(index: Index, now: float) -> dict[str, float]:
    """Every task's urgency by uuid, as Taskwarrior's `task export` reports it."""
    depended = depended_on(index)
    open_uuids = {t.uuid for t in index.tasks.values() if still_open(t.state)}
    tasks = index.tasks.values()
    return {t.uuid: urgency.urgency(t, now, **urgency.flags(t, open_uuids, depended)) for t in tasks}


def depended_on(index: Index) -> set[str]:
    """Uuids some open task (`links.still_open`) depends on: Taskwarrior calls those tasks *blocking*."""
    return {dep for task in index.tasks.values() if still_open(task.state) for dep in task.depends}
