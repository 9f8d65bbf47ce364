"""Dependencies seen both ways: which tasks are blocked or blocking, and a task's neighbours for `show`.

Taskwarrior's terms (ADR 0014): a task is *blocked* while one of its dependencies is open, and
*blocking* while it is open and an open task depends on it. Only the whole index can tell. Open is
`still_open`, what `next` holds a dependent back by (`query.is_ready`): michi_state decides, not a status
a hand edit split from it (ADR 0007), so `list` shows blocked exactly what `next` will not hand out for
an open dependency.
"""

from __future__ import annotations

from typing import Any

from michi.tasks.index import Index
from michi.tasks.model import OPEN_STATES, Task

OPEN_STATUSES = ("pending", "waiting")  # a record's own word, for records without michi_state (an import)


def still_open(state: str) -> bool:
    """Is a task in this michi state still to be done: a dependency that holds its dependents back, a
    dependent that makes what it waits on *blocking*?"""
    return state in OPEN_STATES


class Links:
    def __init__(self, index: Index) -> None:
        self.open: set[str] = set()
        self.awaited: set[str] = set()
        for _oid, rec, _problem in index.entries.values():
            if rec is not None and rec["michi_state"] in OPEN_STATES:  # `still_open`, inlined: 50,000
                self.open.add(rec["uuid"])
                self.awaited.update(rec.get("depends") or ())

    def of(self, rec: dict[str, Any]) -> tuple[bool, bool]:
        """(blocked, blocking) of a task's record."""
        uuid, depends = rec["uuid"], rec.get("depends") or ()
        blocked = bool(depends) and any(d in self.open for d in depends)  # no generator for the many without
        return blocked, uuid in self.awaited and uuid in self.open


def _brief(index: Index, path: str) -> dict[str, Any]:
    rec = index.entries[path][1] or {}
    return {"id": rec.get("michi_id"), "description": rec.get("description"), "state": rec.get("michi_state")}


def neighbours(index: Index, task: Task) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(what `task` depends on, what depends on it): id, description and state of each. A dependency no
    task file has (removed by hand) keeps its uuid as id, with no description."""
    depends_on = [
        _brief(index, index.by_uuid[u])
        if u in index.by_uuid
        else {"id": u, "description": None, "state": None}
        for u in task.depends
    ]
    blocks = [
        _brief(index, p)
        for p, (_oid, rec, _problem) in index.entries.items()
        if rec is not None and task.uuid in (rec.get("depends") or ())
    ]
    blocks.sort(key=lambda b: int(b["id"]))
    return depends_on, blocks
