"""Taskwarrior's urgency: the one number that orders `task next`, `task next --claim` and `task list`.

The coefficients are Taskwarrior 2.6's defaults (`task show urgency`), so a person running Taskwarrior
over the same files sees the same order. michi states map onto its terms: `in_progress` is Taskwarrior's
*active* (a start date), a task whose dependency is still open is *blocked*, one that another open task
depends on is *blocking* (`links`). *Waiting* is read from the `wait` date, as Taskwarrior 2.6's
`Task::is_waiting` does: an open task whose `wait` is still to come, whatever its status says.
"""

from __future__ import annotations

import calendar
import math
from collections.abc import Collection, Iterable, Mapping
from typing import Any

from michi.tasks.model import Task, usual_date
from michi.tasks.serialization import to_record

PRIORITY = {"H": 6.0, "M": 3.9, "L": 1.8}
NEXT_TAG = 15.0
DUE = 12.0
BLOCKING = 8.0
SCHEDULED = 5.0
ACTIVE = 4.0
AGE = 2.0
AGE_MAX_DAYS = 365.0
ANNOTATIONS = 1.0
TAGS = 1.0
PROJECT = 1.0
WAITING = -3.0
BLOCKED = -5.0
DAY = 86400.0


# Taskwarrior's step for tags and annotations: none 0, one 0.8, two 0.9, more 1.0.
_FACTORS = (0.0, 0.8, 0.9)


def epoch(value: object) -> float | None:
    """A `YYYYMMDDTHHMMSSZ` date as epoch seconds, four times faster than `strptime`: a cold `list` cache
    rebuild reads 10,000 of them. None for anything else: `due` and `scheduled` are kept as they came (a
    hand edit, an import), and one that is no date (year 0, month 13) must not stop every `list`."""
    if type(value) is not str or len(value) != 16 or value[8] != "T" or value[15] != "Z":
        return None
    # timegm is whole-number arithmetic: the day's seconds plus the time's, the day's computed (and the
    # day checked by `usual_date`) once per day.
    start = _days.get(value[:8])
    if start is None:
        fields = usual_date(value)
        if fields is None:
            return None
        start = calendar.timegm((*fields[:3], 0, 0, 0))
        if len(_days) < 65536:
            _days[value[:8]] = start
    clock = value[9:15]
    if not (clock.isascii() and clock.isdigit()):
        return None
    hms = int(clock)
    hour, minute, second = hms // 10000, hms // 100 % 100, hms % 100
    if hour > 23 or minute > 59 or second > 61:
        return None
    return float(start + hour * 3600 + minute * 60 + second)


_days: dict[str, int] = {}  # a valid day (YYYYMMDD) -> its start in epoch seconds


def _due_factor(due: float, now: float) -> float:
    """Rises from 0.2 two weeks before the due date to 1.0 a week after it (Taskwarrior's ramp)."""
    overdue_days = (now - due) / DAY
    if overdue_days >= 7.0:
        return 1.0
    if overdue_days >= -14.0:
        return (overdue_days + 14.0) * 0.8 / 21.0 + 0.2
    return 0.2


# Urgency split in two so `list` can cache what does not change with the clock (ADR 0014): the sum of the
# fixed terms, then the entry, due, scheduled and wait dates (epochs) that the terms depending on `now` need.
Terms = tuple[float, float | None, float | None, float | None, float | None]
ZERO: Terms = (0.0, None, None, None, None)


def terms(rec: Mapping[str, Any], *, blocked: bool = False, blocking: bool = False) -> Terms:
    """The terms of a task file's record (Taskwarrior's names, as `serialization.to_record` writes them)."""
    get = rec.get
    status = get("status")
    if status in ("completed", "deleted"):
        return ZERO
    tags = get("tags") or ()
    total = 0.0
    if "next" in tags:
        total += NEXT_TAG
    if blocking:
        total += BLOCKING
    if get("start") or get("michi_state") == "in_progress":
        total += ACTIVE
    notes = len(get("annotations") or ())
    total += ANNOTATIONS * (_FACTORS[notes] if notes < 3 else 1.0)
    total += TAGS * (_FACTORS[len(tags)] if len(tags) < 3 else 1.0)
    if get("project"):
        total += PROJECT
    if blocked:
        total += BLOCKED
    total += PRIORITY.get(get("priority") or "", 0.0)
    entry = epoch(get("entry"))  # no readable entry: no age, as Taskwarrior
    # Extra keys, rarely there: no call for them then. A `wait` that is no date is none here, as a `due`.
    due, scheduled, wait = get("due"), get("scheduled"), get("wait")
    return (
        total,
        math.inf if entry is None else entry,
        None if due is None else epoch(due),
        None if scheduled is None else epoch(scheduled),
        None if wait is None else epoch(wait),
    )


def at(parts: Terms, now: float) -> float:
    """The urgency the terms give at `now`, rounded to three decimals (plenty to order by)."""
    return at_many([parts], now)[0]


def at_many(many: Iterable[Terms], now: float) -> list[float]:
    """`at` for many tasks in one loop: `list` orders 10,000 by it on every run."""
    out: list[float] = []
    append, scale, day = out.append, AGE / AGE_MAX_DAYS, DAY
    for total, entry, due, scheduled, wait in many:
        if entry is None:  # completed or deleted
            append(0.0)
            continue
        age_days = (now - entry) / day
        total += AGE if age_days >= AGE_MAX_DAYS else scale * age_days if age_days > 0 else 0.0
        if due is not None:
            total += DUE * _due_factor(due, now)
        if scheduled is not None and scheduled <= now:
            total += SCHEDULED
        if wait is not None and wait > now:  # not the `waiting` status: it outlives the date (ADR 0007)
            total += WAITING
        append(round(total, 3))
    return out


def urgency(task: Task, now: float, *, blocked: bool = False, blocking: bool = False) -> float:
    """The task's urgency at `now`, as Taskwarrior's export reports it (to three decimals)."""
    return at(terms(to_record(task), blocked=blocked, blocking=blocking), now)


def flags(task: Task, open_uuids: Collection[str], blocked_uuids: Collection[str]) -> dict[str, bool]:
    """`blocked` (a dependency is still open) and `blocking` (an open task depends on this one)."""
    return {
        "blocked": any(dep in open_uuids for dep in task.depends),
        "blocking": task.uuid in blocked_uuids,
    }
