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
from typing import Any

from michi.plain import Plain

STATES = ("todo", "in_progress", "review", "done", "deleted")
OPEN_STATES = ("todo", "in_progress", "review")
STATUSES = ("pending", "completed", "deleted", "waiting")
OPEN_STATUSES = ("pending", "waiting")  # Taskwarrior's: neither completed nor deleted
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
    """Epoch seconds of a Taskwarrior date, as `strptime(text, DATE_FORMAT)` reads it."""
    fields = usual_date(text)
    if fields is not None:
        return float(calendar.timegm(fields))
    return float(calendar.timegm(time.strptime(text, DATE_FORMAT)))  # the rest: strptime decides


def is_tw_date(text: object) -> bool:
    if not isinstance(text, str) or len(text) != 16:
        return False
    if plain_date(text):  # what `usual_date` accepts, in one match and a lookup (ADR 0015)
        return True
    try:
        parse_tw_date(text)
    except ValueError:
        return False
    return True


# Taskwarrior's dates that hold an open task back until they pass (its READY excludes both). One that is
# no date (a hand edit, another tool's file: michi writes neither, and import refuses such a record) holds
# it back for good: it was read as none, and `next` handed out a task someone meant to defer. `michi
# doctor` names it, `no_ready_task` counts it as `bad_date` (stuck).
HOLDS = ("wait", "scheduled")


def bad_holds(extra: Mapping[str, Any]) -> list[str]:
    """The keys of `HOLDS` in a task's extra fields that hold something other than a date (null: none)."""
    return [key for key in HOLDS if extra.get(key) is not None and not is_tw_date(extra[key])]


def held_until_later(extra: Mapping[str, Any], now: float) -> bool:
    """Is a `wait` or `scheduled` date still to come? Then time alone frees the task: `no_ready_task`
    counts it as `waiting`, whatever its status says (Taskwarrior 2.6 reads waiting from the date too,
    and stores no `waiting` status: its import turns one into `pending`)."""
    for key in HOLDS:
        value = extra.get(key)
        if value is not None and is_tw_date(value) and parse_tw_date(value) > now:
            return True
    return False


def split(status: str, state: str) -> bool:
    """Do Taskwarrior's `status` and `michi_state` disagree on whether the task is finished? michi
    writes both from one state (`status_for`) and an import derives the state from the status, so only a
    hand edit (or another tool writing the file) splits them. `michi_state` decides (ADR 0007)."""
    return (state in OPEN_STATES) != (status in OPEN_STATUSES)


_DAYS = (0, 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)
# The usual form with the clock in range (as `usual_date` checks it); the day is checked by `plain_day`.
_PLAIN_TIME = re.compile(r"[0-9]{8}T(?:[01][0-9]|2[0-3])[0-5][0-9](?:[0-5][0-9]|6[01])Z")
_DAYS_SEEN: dict[str, bool] = {}  # YYYYMMDD -> a real day; bounded below


def plain_date(value: object) -> bool:
    """Is `value` a date `usual_date` accepts, checked by one match and a remembered day (an import checks
    100,000, a cold list reads 100,000 from 50,000 task files)? False says nothing: other spellings may be
    dates that `parse_tw_date` reads."""
    return type(value) is str and _PLAIN_TIME.fullmatch(value) is not None and plain_day(value[:8])


def plain_day(digits: str) -> bool:
    """Is YYYYMMDD (ASCII digits) a day `usual_date` accepts? Remembered: an export's dates share days."""
    known = _DAYS_SEEN.get(digits)
    if known is None:
        if len(_DAYS_SEEN) >= 4096:
            _DAYS_SEEN.clear()
        year, month, day = int(digits[:4]), int(digits[4:6]), int(digits[6:])
        known = bool(year and 1 <= month <= 12 and 1 <= day <= _DAYS[month])
        known = known and not (month == 2 and day == 29 and not calendar.isleap(year))
        _DAYS_SEEN[digits] = known
    return known


def usual_date(text: str) -> tuple[int, int, int, int, int, int] | None:
    """The fields of a date in the usual form (ASCII digits, in range), read by slicing; None for any
    other spelling, which strptime decides. strptime's first call costs milliseconds of imports and
    regular expressions in every process, and each call ~10 us on a cold list (ADR 0010)."""
    if len(text) != 16 or text[8] != "T" or text[15] != "Z":
        return None
    digits = text[:8] + text[9:15]
    if not (digits.isascii() and digits.isdigit()):
        return None
    year, month, day = int(digits[:4]), int(digits[4:6]), int(digits[6:8])
    hour, minute, second = int(digits[8:10]), int(digits[10:12]), int(digits[12:])
    if not (year and 1 <= month <= 12 and 1 <= day <= _DAYS[month] and hour < 24 and minute < 60):
        return None
    if second > 61 or (month == 2 and day == 29 and not calendar.isleap(year)):
        return None
    return year, month, day, hour, minute, second


def status_for(state: str, previous_status: str = "pending") -> str:
    """The Taskwarrior status a michi state shows as; a waiting task stays waiting while it is todo (and
    its wait is still to come: `Task.evolve`)."""
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


class Annotation(Plain):
    __slots__ = ("description", "entry")

    def __init__(self, entry: str, description: str) -> None:
        self.entry, self.description = entry, description


class Task(Plain):
    """One task, as its file holds it. Read-only: `evolve` and `replace` make changed copies."""

    __slots__ = (
        "annotations",
        "assignee",
        "claim_expires",
        "depends",
        "description",
        "end",
        "entry",
        "extra",
        "id",
        "modified",
        "priority",
        "project",
        "start",
        "state",
        "status",
        "tags",
        "uuid",
        "version",
    )

    def __init__(
        self,
        uuid: str,
        id: int,
        description: str,
        entry: str,
        modified: str,
        status: str = "pending",
        state: str = "todo",
        priority: str | None = None,
        project: str | None = None,
        tags: tuple[str, ...] = (),
        depends: tuple[str, ...] = (),  # uuids, as Taskwarrior stores them
        start: str | None = None,
        end: str | None = None,
        annotations: tuple[Annotation, ...] = (),
        assignee: str | None = None,
        claim_expires: str | None = None,  # None with an assignee: a claim without expiry (--ttl 0)
        version: int = 1,
        extra: Mapping[str, Any] | None = None,  # other Taskwarrior attributes, kept verbatim
    ) -> None:
        self.uuid = uuid
        self.id = id
        self.description = description
        self.entry = entry
        self.modified = modified
        self.status = status
        self.state = state
        self.priority = priority
        self.project = project
        self.tags = tags
        self.depends = depends
        self.start = start
        self.end = end
        self.annotations = annotations
        self.assignee = assignee
        self.claim_expires = claim_expires
        self.version = version
        self.extra: Mapping[str, Any] = {} if extra is None else extra

    def replace(self, **changes: Any) -> Task:
        """A copy with `changes` (as `dataclasses.replace`)."""
        return Task(**{**{name: getattr(self, name) for name in self._fields}, **changes})

    def evolve(self, now: float, **changes: Any) -> Task:
        """Every change bumps `version` and `modified` (seed 004's optimistic concurrency), and writes the
        status that goes with the state (ADR 0007): one a hand edit split from it is mended, and a
        `waiting` task whose wait has passed (or that has none) is `pending`, as Taskwarrior un-waits it."""
        task = self.replace(version=self.version + 1, modified=tw_date(now), **changes)
        status = status_for(task.state, task.status)
        wait = task.extra.get("wait")
        if status == "waiting" and (wait is None or (is_tw_date(wait) and parse_tw_date(wait) <= now)):
            status = "pending"
        return task if status == task.status else task.replace(status=status)

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
