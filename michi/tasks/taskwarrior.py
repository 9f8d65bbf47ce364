"""Taskwarrior 2.6 interop (record 78): what `task import` accepts, and `task export` output read back.

Checked against Taskwarrior 2.6.2: unknown keys survive as orphaned UDAs, but numbers come back as
strings ("42.000000") or floats; exports add `id` and `urgency`; a task completed, deleted, started or
stopped in Taskwarrior keeps the stale `michi_state` it had; a tag "x,y" comes back as "x", "x,y" and
"y"; annotations made in the same second come back one second apart each (`task import` keys them by
time); other attributes' (UDAs') values come back as text ("1.500000", '{"a":1.000000}'). `normalize` and
`settle` undo each of these.
"""

from __future__ import annotations

from typing import Any

from michi.errors import UsageError
from michi.tasks import serialization
from michi.tasks.errors import CorruptTask, DependencyCycle
from michi.tasks.ids import UUID_RE
from michi.tasks.model import MAX_DEPTH, Task, is_tw_date, parse_tw_date, state_for

DOMAIN_KEY = "michi_domain"  # only in exports: where the task lives, so a round trip keeps it there
DROPPED = ("id", "urgency")
WHOLE_NUMBERS = ("michi_id", "michi_version")
# michi states a Taskwarrior status can go with; anything else is re-derived from the status
FITS = {
    "pending": ("todo", "in_progress", "review"),
    "waiting": ("todo",),
    "completed": ("done",),
    "deleted": ("deleted",),
}


def export_record(task: Task, domain: str) -> dict[str, Any]:
    return {**serialization.to_record(task), DOMAIN_KEY: domain}


_EXACT = 2**53  # every int up to this is its own float: `int(float(value))` gives it back


def _whole(value: Any) -> Any:
    if type(value) is int and -_EXACT <= value <= _EXACT:  # the usual case, answered as below
        return value
    try:
        number = float(value)
    except (TypeError, ValueError, OverflowError):
        return value
    return int(number) if number.is_integer() else value


def split_tags(tags: Any) -> Any:
    """Tags as Taskwarrior means them: "x,y" is the two tags x and y (its export also lists "x,y")."""
    if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
        return tags  # from_record names the problem
    if len(tags) == 1 and type(tags[0]) is str and "," not in tags[0] and tags[0].strip() == tags[0] != "":
        return [tags[0]]  # one plain tag (most tasks): what the general way below gives
    return list(dict.fromkeys(part.strip() for t in tags for part in t.split(",") if part.strip()))


def _pending_state(record: dict[str, Any]) -> None:
    """`task start` / `task stop` in Taskwarrior only set or drop `start`: the michi state follows it. A
    task stopped there is nobody's any more, so a claim on it goes too (else no agent could take it)."""
    state, started = record.get("michi_state"), bool(record.get("start"))
    if state == "todo" and started:
        record["michi_state"] = "in_progress"
    elif state == "in_progress" and not started:
        record["michi_state"] = "todo"
        record.pop("michi_assignee", None)
        record.pop("michi_claim_expires", None)


def normalize(item: Any, number: int | None = None) -> tuple[dict[str, Any], Any]:
    """One `task export` object (the file's `number`th, if given) as a michi file record, and the
    `michi_domain` it names (None if none). Raises UsageError (or BadAgent) for input no task may hold,
    naming the task: the import runs this over the whole file before the first task lands (ADR 0015)."""
    if not isinstance(item, dict) or not isinstance(item.get("uuid"), str):
        raise UsageError(
            "every task to import must be a JSON object with a uuid", hint="pass 'task export' output"
        )
    where = f"task {item['uuid'][:36]!r}" + ("" if number is None else f" (record {number})")
    where += " of the import file"
    if serialization.too_deep(item, 1):
        raise UsageError(f"{where} is nested deeper than {MAX_DEPTH} levels", hint="fix the import file")
    record = {k: v for k, v in item.items() if k not in DROPPED}
    domain = record.pop(DOMAIN_KEY, None)
    for key in WHOLE_NUMBERS:
        if key in record:
            record[key] = _whole(record[key])
    depends = record.get("depends")
    if isinstance(depends, str):  # Taskwarrior before 2.6 wrote a comma-separated string
        depends = record["depends"] = [d for d in depends.split(",") if d]
    if isinstance(depends, list) and any(isinstance(d, str) and not d.islower() for d in depends):
        # uuids are lower case (the task's own is made so below): `B` must name task `b` for `next` and
        # `doctor` too, as it does for the import's cycle check, not a task no file holds.
        record["depends"] = [d.lower() if isinstance(d, str) else d for d in depends]
    if "tags" in record:
        record["tags"] = split_tags(record["tags"])
    status = record.get("status")
    if isinstance(status, str) and record.get("michi_state") not in FITS.get(status, ()):
        record["michi_state"] = state_for(status, record.get("start"))
    if status == "pending":
        _pending_state(record)
    if isinstance(record.get("michi_assignee"), str):
        from michi.agent import check_agent

        check_agent(record["michi_assignee"], where)
    record["uuid"] = record["uuid"].lower()
    if not UUID_RE.fullmatch(record["uuid"]):  # it names the task's file: `../x` or `a/b` must not
        raise UsageError(f"{where}: uuid {item['uuid'][:80]!r} is not a UUID", hint="fix the import file")
    _check_links_and_notes(record, where)
    _check_fields(record, where)
    return record, domain


TW_DATES = ("due", "wait", "scheduled", "until")  # Taskwarrior's own dates michi keeps as extra keys


def _check_fields(record: dict[str, Any], where: str) -> None:
    """What would keep the record out of a task file, found before anything lands, so an import lands
    whole or not at all (README): a recurring template, a date or a dependency Taskwarrior never writes,
    and every check a task file gets (`serialization`). The id and version are the repository's to give."""
    if record.get("status") == "recurring":  # michi has no recurrence: the template has no status here
        raise UsageError(
            f"{where} is a Taskwarrior recurring template (status recurring): michi keeps no recurrence",
            hint="export without templates: task status.not:recurring export",
        )
    if "" in record:  # Taskwarrior takes it, then writes an export no JSON reader reads
        raise UsageError(
            f"{where} has a field with an empty name", hint="remove that field from the import file"
        )
    for key in TW_DATES:
        if key in record and not is_tw_date(record[key]):
            raise UsageError(
                f"{where}: {key} {str(record[key])[:40]!r} is not a date",
                hint="write dates as Taskwarrior does: YYYYMMDDTHHMMSSZ (UTC)",
            )
    depends = record.get("depends")
    for dep in depends if isinstance(depends, list) else ():
        if isinstance(dep, str) and not UUID_RE.fullmatch(dep):  # no task could ever be named so
            raise UsageError(
                f"{where}: depends on {dep[:40]!r}, which is no task uuid",
                hint="depends lists the uuids of other tasks: fix the import file",
            )
    try:
        serialization.check(record, where)
    except CorruptTask as exc:
        raise UsageError(exc.message, hint="fix the import file") from None


def _check_links_and_notes(record: dict[str, Any], where: str) -> None:
    """What `task add`, `modify` and `annotate` could never make: a task waiting for itself (it could never
    start), a project or tag of more than one printable line, a note whose time is no date (Taskwarrior
    keys notes by it; `log` and sorting read it)."""
    depends = record.get("depends")
    if isinstance(depends, list) and any(isinstance(d, str) and d.lower() == record["uuid"] for d in depends):
        raise DependencyCycle(
            f"{where} depends on itself: it could never start", hint="remove its own uuid from its depends"
        )
    tags = record.get("tags")
    names = [record.get("project"), *(tags if isinstance(tags, list) else ())]
    for name in names:
        if isinstance(name, str) and not name.isprintable():  # as `task add` refuses them
            raise UsageError(
                f"{where}: project or tag {name[:40]!r} contains control or invisible characters",
                hint="a project or tag is one line of printable text: fix the import file",
            )
    notes = record.get("annotations")
    for note in notes if isinstance(notes, list) else ():
        entry = note.get("entry") if isinstance(note, dict) else None
        if not is_tw_date(entry):
            raise UsageError(
                f"{where}: annotation entry {str(entry)[:40]!r} is not a date",
                hint="write note times as Taskwarrior does: YYYYMMDDTHHMMSSZ (UTC)",
            )


def _bumped(new: Any, old: Task) -> bool:
    """Are `new` annotations `old`'s, with the entry times Taskwarrior moved on (each by less than the
    number of notes: it adds a second until the time is free)?"""
    if not isinstance(new, list) or len(new) != len(old.annotations):
        return False
    try:
        for got, had in zip(new, old.annotations, strict=True):
            shift = parse_tw_date(got["entry"]) - parse_tw_date(had.entry)
            if got["description"] != had.description or not 0 <= shift < len(new):
                return False
    except (TypeError, KeyError, ValueError):
        return False
    return True


def spelled(value: Any, inner: bool = False) -> str | None:
    """`value`, an attribute Taskwarrior 2.6.2 does not know (a UDA), as its `task export` returns it
    after `task import`: a string, numbers as `%f` ("1.500000"), `true`, `null`, and arrays and objects
    as one line of text with their keys sorted and their strings unescaped. None if it has no spelling."""
    if value is None or isinstance(value, bool):
        return "null" if value is None else ("true" if value else "false")
    if isinstance(value, int | float):
        try:
            return f"{value:f}"  # C's %f, as Taskwarrior writes it
        except OverflowError:  # an int beyond any double: Taskwarrior keeps no such number either
            return None
    if isinstance(value, str):
        return f'"{value}"' if inner else value
    if isinstance(value, list):
        items = [spelled(v, True) for v in value]
        return None if None in items else "[" + ",".join(map(str, items)) + "]"
    if isinstance(value, dict):
        pairs = [(k, spelled(value[k], True)) for k in sorted(value)]
        if any(v is None for _, v in pairs):
            return None
        return "{" + ",".join(f'"{k}":{v}' for k, v in pairs) + "}"
    return None


def _respelled(got: Any, had: Any) -> bool:
    """Is the imported `got` the file's `had` as a round trip through Taskwarrior returns it?"""
    if isinstance(got, str):
        return not isinstance(had, str) and got == spelled(had)
    # a UDA declared numeric there comes back as a number: 3.0 for 3 (never a bool: True == 1 in Python)
    return type(got) is float and type(had) is int and got == had


def settle(record: dict[str, Any], old: Task) -> None:
    """Keep michi's own spelling of what a round trip through Taskwarrior only re-spelled: tags in
    another order or split at commas, annotation times Taskwarrior moved by a second or two, and the
    values of attributes it does not know (UDAs: numbers, true, null, arrays and objects come back as
    text, `spelled`). A value that differs in more than its spelling is a change and lands."""
    tags = record.get("tags")
    if isinstance(tags, list) and set(split_tags(list(old.tags))) == set(tags):
        record["tags"] = list(old.tags)
    if old.annotations and _bumped(record.get("annotations"), old):
        record["annotations"] = [{"entry": a.entry, "description": a.description} for a in old.annotations]
    for key, had in old.extra.items():
        got = record.get(key, had)
        if got is not had and _respelled(got, had):
            record[key] = had


def stale(record: dict[str, Any], old: Task) -> bool:
    """Did michi's copy change after the data being imported was exported? Its version says so; a record
    without one (a task born in Taskwarrior) is stale when michi changed it later than Taskwarrior did."""
    version = record.get("michi_version")
    if type(version) is int:
        return version < old.version
    modified = record.get("modified")
    return isinstance(modified, str) and modified < old.modified
