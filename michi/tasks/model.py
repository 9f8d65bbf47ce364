"""A task as michi stores it: Taskwarrior 2.6 fields and formats, plus michi's own as `michi_*` attributes.

Taskwarrior keeps keys it does not know as orphaned user-defined attributes through `task import` and
`task export` (checked against 2.6.2; it turns numbers into strings such as "42.000000", which
`michi.tasks.taskwarrior` undoes), so the `michi_` prefix is what lets both tools share one file (ADR 0006).
"""

from __future__ import annotations

import calendar
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import date
from typing import Any

STATES = ("todo", "in_progress", "review", "done", "deleted")
OPEN_STATES = ("todo", "in_progress", "review")
STATUSES = ("pending", "completed", "deleted", "waiting")
PRIORITIES = ("H", "M", "L")
DATE_FORMAT = "%Y%m%dT%H%M%SZ"
# Caps on what a task file may hold (ADR 0006, README "Tasks"): a file beyond them is `corrupt_task`, so
# one hand-made file can neither crash every command nor push the id counter out of range.
MAX_ID = 999_999_999  # ids and versions: nine digits
MAX_TASK_BYTES = 1024 * 1024  # one task file, as stored
MAX_DEPTH = 16  # nesting of JSON arrays and objects; Taskwarrior's own records nest three deep


def tw_date(epoch: float) -> str:
    return time.strftime(DATE_FORMAT, time.gmtime(epoch))


def parse_tw_date(text: str) -> float:
    return float(calendar.timegm(time.strptime(text, DATE_FORMAT)))


_PLAIN_DATE = re.compile(r"[0-9]{8}T[0-9]{6}Z")


def is_tw_date(text: object) -> bool:
    if not isinstance(text, str) or len(text) != 16:
        return False
    # The common spelling checked without strptime (~30 us a date, two dates a task, 50,000 tasks on a
    # cold read: ADR 0015); anything else (or out of range) gets strptime's exact answer.
    if _PLAIN_DATE.fullmatch(text):
        try:
            date(int(text[:4]), int(text[4:6]), int(text[6:8]))
        except ValueError:
            pass
        else:
            if text[9:11] < "24" and text[11:13] < "60" and text[13:15] < "60":
                return True
    try:
        parse_tw_date(text)
    except ValueError:
        return False
    return True


def status_for(state: str, previous_status: str = "pending") -> str:
    """The Taskwarrior status a michi state shows as; a waiting task stays waiting while it is todo."""
    if state == "done":
        return "completed"
    if state == "deleted":
        return "deleted"
    return "waiting" if state == "todo" and previous_status == "waiting" else "pending"


def state_for(status: str, start: str | None) -> str:
    """The michi state of a task that Taskwarrior (or a hand edit) wrote without `michi_state`."""
    if status == "completed":
        return "done"
    if status == "deleted":
        return "deleted"
    return "in_progress" if start else "todo"


@dataclass(frozen=True)
class Annotation:
    entry: str
    description: str


@dataclass(frozen=True)
class Task:
    uuid: str
    id: int
    description: str
    entry: str
    modified: str
    status: str = "pending"
    state: str = "todo"
    priority: str | None = None
    project: str | None = None
    tags: tuple[str, ...] = ()
    depends: tuple[str, ...] = ()  # uuids, as Taskwarrior stores them
    start: str | None = None
    end: str | None = None
    annotations: tuple[Annotation, ...] = ()
    assignee: str | None = None
    claim_expires: str | None = None  # None with an assignee: a claim without expiry (--ttl 0)
    version: int = 1
    extra: Mapping[str, Any] = field(default_factory=dict)  # other Taskwarrior attributes, kept verbatim

    def evolve(self, now: float, **changes: Any) -> Task:
        """Every change bumps `version` and `modified` (seed 004's optimistic concurrency)."""
        return replace(self, version=self.version + 1, modified=tw_date(now), **changes)

    @property
    def claim_expires_at(self) -> float | None:
        return parse_tw_date(self.claim_expires) if self.claim_expires else None

    def claimed_by_other(self, agent: str | None, now: float) -> bool:
        return self.claim_holder(now) not in (None, agent)

    def claim_holder(self, now: float) -> str | None:
        """Who holds a live claim on this task, if anyone."""
        if self.state != "in_progress" or not self.assignee:
            return None
        expires = self.claim_expires_at
        return self.assignee if expires is None or expires > now else None
