"""Taskwarrior's urgency: the one number that orders `task next`, `task next --claim` and `task list`.

The coefficients are Taskwarrior 2.6's defaults (`task show urgency`), so a person running Taskwarrior
over the same files sees the same order. michi states map onto its terms: `in_progress` is Taskwarrior's
*active* (a start date), a task whose dependency is still open is *blocked*, one that another open task
depends on is *blocking*.
"""

from __future__ import annotations

import calendar
from collections.abc import Collection

from michi.tasks.model import Task, parse_tw_date

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


def _count_factor(n: int) -> float:
    """Taskwarrior's step for tags and annotations: none 0, one 0.8, two 0.9, more 1.0."""
    return 0.0 if n == 0 else 0.8 if n == 1 else 0.9 if n == 2 else 1.0


def _epoch(text: str) -> float:
    """`parse_tw_date` without strptime, which costs ~0.1 ms a call: `next` scores every ready task."""
    if len(text) == 16 and text[8] == "T" and text[15] == "Z" and text[:8].isdigit() and text[9:15].isdigit():
        fields = (text[0:4], text[4:6], text[6:8], text[9:11], text[11:13], text[13:15])
        return float(calendar.timegm(tuple(int(f) for f in fields)))
    return parse_tw_date(text)  # anything unusual: the strict parser decides (ValueError)


def _date(task: Task, name: str) -> float | None:
    value = task.extra.get(name)
    if not isinstance(value, str):
        return None
    try:
        return _epoch(value)
    except ValueError:
        return None


def _due_factor(due: float, now: float) -> float:
    """Rises from 0.2 two weeks before the due date to 1.0 a week after it (Taskwarrior's ramp)."""
    overdue_days = (now - due) / DAY
    if overdue_days >= 7.0:
        return 1.0
    if overdue_days >= -14.0:
        return (overdue_days + 14.0) * 0.8 / 21.0 + 0.2
    return 0.2


def urgency(task: Task, now: float, *, blocked: bool = False, blocking: bool = False) -> float:
    """The task's urgency at `now`, rounded as Taskwarrior's export prints it (to 1e-6 would be too
    precise to compare; three decimals are plenty to order by)."""
    if task.status in ("completed", "deleted"):
        return 0.0
    total = 0.0
    if "next" in task.tags:
        total += NEXT_TAG
    due = _date(task, "due")
    if due is not None:
        total += DUE * _due_factor(due, now)
    if blocking:
        total += BLOCKING
    scheduled = _date(task, "scheduled")
    if scheduled is not None and scheduled <= now:
        total += SCHEDULED
    if task.start or task.state == "in_progress":
        total += ACTIVE
    try:
        age_days = max(0.0, (now - _epoch(task.entry)) / DAY)
    except ValueError:
        age_days = 0.0
    total += AGE * min(1.0, age_days / AGE_MAX_DAYS)
    total += ANNOTATIONS * _count_factor(len(task.annotations))
    total += TAGS * _count_factor(len(task.tags))
    if task.project:
        total += PROJECT
    if task.status == "waiting":
        total += WAITING
    if blocked:
        total += BLOCKED
    total += PRIORITY.get(task.priority or "", 0.0)
    return round(total, 3)


def flags(task: Task, open_uuids: Collection[str], blocked_uuids: Collection[str]) -> dict[str, bool]:
    """`blocked` (a dependency is still open) and `blocking` (an open task depends on this one)."""
    return {
        "blocked": any(dep in open_uuids for dep in task.depends),
        "blocking": task.uuid in blocked_uuids,
    }
