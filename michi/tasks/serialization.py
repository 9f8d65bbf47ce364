"""The on-disk form of a task: pretty JSON, one stable key order, trailing newline (small, readable diffs).

Parsing is strict: a file with conflict markers, bad JSON, a missing or ill-typed field, NaN, an id out of
range, or beyond the size and nesting caps raises `CorruptTask` naming the file, so callers report it
instead of skipping it, writing over it or crashing on it (ADR 0006).
"""

from __future__ import annotations

import json
import re
from types import SimpleNamespace
from typing import Any

from michi.agent import agent_problem
from michi.strictjson import strict_decoder as strict_decoder
from michi.strictjson import strict_json as strict_json
from michi.tasks.errors import CorruptTask
from michi.tasks.model import (
    MAX_DEPTH,
    MAX_ID,
    MAX_TASK_BYTES,
    PRIORITIES,
    STATES,
    STATUSES,
    Annotation,
    Task,
    is_tw_date,
    state_for,
)

KEY_ORDER = (
    "uuid",
    "michi_id",
    "description",
    "status",
    "michi_state",
    "priority",
    "project",
    "tags",
    "depends",
    "entry",
    "modified",
    "start",
    "end",
    "annotations",
    "michi_assignee",
    "michi_claim_expires",
    "michi_version",
)
KNOWN = frozenset(KEY_ORDER)
REQUIRED = ("uuid", "michi_id", "description", "status", "entry")
CONFLICT_MARKERS = (b"<<<<<<< ", b"\n=======\n", b">>>>>>> ")


def to_record(task: Task) -> dict[str, Any]:
    """The JSON object of a file: Taskwarrior's names, michi's extras, empty values left out."""
    values: dict[str, Any] = {
        "uuid": task.uuid,
        "michi_id": task.id,
        "description": task.description,
        "status": task.status,
        "michi_state": task.state,
        "priority": task.priority,
        "project": task.project,
        "tags": list(task.tags),
        "depends": sorted(task.depends),
        "entry": task.entry,
        "modified": task.modified,
        "start": task.start,
        "end": task.end,
        "annotations": [{"entry": a.entry, "description": a.description} for a in task.annotations],
        "michi_assignee": task.assignee,
        "michi_claim_expires": task.claim_expires,
        "michi_version": task.version,
    }
    record = {k: v for k, v in values.items() if v not in (None, [], "")}
    for key in sorted(task.extra):
        record[key] = task.extra[key]
    return record


def dumps(task: Task) -> bytes:
    return dumps_record(to_record(task))


def dumps_record(record: dict[str, Any]) -> bytes:
    """`json.dumps(record, indent=2, ensure_ascii=False)` and a newline, byte for byte, without the pure
    Python encoder `indent` falls back to (~10x slower; 50,000 of these in an import: ADR 0015)."""
    return (_pretty(record, "\n") + "\n").encode("utf-8")


_string = json.encoder.encode_basestring  # the C function json.dumps uses when ensure_ascii is off


def _pretty(value: Any, pad: str) -> str:
    if type(value) is dict and value:  # a task record: mostly strings, written inline
        inner = pad + "  "
        string = _string
        items = [
            string(k) + ": " + (string(v) if type(v) is str else _pretty(v, inner))
            if type(k) is str
            else _key(k) + ": " + _pretty(v, inner)
            for k, v in value.items()
        ]
        return "{" + inner + ("," + inner).join(items) + pad + "}"
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, dict):
        if not value:
            return "{}"
        inner = pad + "  "
        pairs = (f"{_key(k)}: {_pretty(v, inner)}" for k, v in value.items())
        return "{" + inner + ("," + inner).join(pairs) + pad + "}"
    if isinstance(value, list | tuple):
        if not value:
            return "[]"
        inner = pad + "  "
        return "[" + inner + ("," + inner).join(_pretty(v, inner) for v in value) + pad + "]"
    if value is None or value is True or value is False:
        return _CONSTANTS[value]
    if isinstance(value, int):
        return int.__repr__(value)
    if isinstance(value, float):
        return float.__repr__(value) if value == value and abs(value) != _INF else json.dumps(value)
    return json.dumps(value)  # not JSON: json.dumps raises its own TypeError


_CONSTANTS = {None: "null", True: "true", False: "false"}
_INF = float("inf")


def _key(key: Any) -> str:
    return _string(key) if isinstance(key, str) else _string(json.dumps(key).strip('"'))


def _str(record: dict[str, Any], key: str, where: str, allowed: tuple[str, ...] = ()) -> str | None:
    value = record.get(key)
    if value is None:
        return None
    if not isinstance(value, str) or (allowed and value not in allowed):
        hint = f" (one of {', '.join(allowed)})" if allowed else ""
        raise CorruptTask(f"{where}: {key} = {value!r} is not valid{hint}", hint="fix the file by hand")
    return value


def _strings(record: dict[str, Any], key: str, where: str) -> tuple[str, ...]:
    value = record.get(key) or []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise CorruptTask(f"{where}: {key} must be a list of strings", hint="fix the file by hand")
    return tuple(value)


_CONTAINERS = (dict, list)
_SCALARS = frozenset((str, int, float, bool, type(None)))  # what most values are: no isinstance needed


def too_deep(value: Any, depth: int) -> bool:
    """Nested deeper than MAX_DEPTH. It recurses into containers only, and stops one level past the cap,
    so a hostile 100,000-level value costs 17 frames, never the interpreter's stack. A plain loop with a
    set lookup per value: a third of the time of the isinstance comprehension it replaces (an import
    checks 50,000 tasks, ADR 0015)."""
    if type(value) is dict:
        children: Any = value.values()
    elif type(value) is list:
        children = value
    elif isinstance(value, _CONTAINERS):
        children = value.values() if isinstance(value, dict) else value
    else:
        return False
    if depth > MAX_DEPTH:
        return True
    scalars = _SCALARS
    for child in children:
        if type(child) not in scalars and isinstance(child, _CONTAINERS) and too_deep(child, depth + 1):
            return True
    return False


def _agent(record: dict[str, Any], where: str) -> str | None:
    name = _str(record, "michi_assignee", where)
    problem = None if name is None else agent_problem(name)
    if problem is not None:
        raise CorruptTask(f"{where}: michi_assignee {name!r} {problem}", hint="fix the file by hand")
    return name


def _fields(record: Any, where: str) -> dict[str, Any]:
    """A file record checked (ADR 0006): the Task's fields, or CorruptTask naming what is wrong."""
    if not isinstance(record, dict):
        raise CorruptTask(f"{where}: not a JSON object", hint="fix the file by hand")
    missing = [k for k in REQUIRED if record.get(k) in (None, "")]
    if missing:
        raise CorruptTask(f"{where}: missing {', '.join(missing)}", hint="fix the file by hand")
    for key in ("entry", "modified", "start", "end", "michi_claim_expires"):
        if key in record and not is_tw_date(record[key]):
            raise CorruptTask(f"{where}: {key} is not a YYYYMMDDTHHMMSSZ date", hint="fix the file by hand")
    ident, version = record["michi_id"], record.get("michi_version", 1)
    if (
        type(ident) is not int
        or type(version) is not int
        or not (0 < ident <= MAX_ID and 0 < version <= MAX_ID)
    ):
        raise CorruptTask(
            f"{where}: michi_id and michi_version must be whole numbers from 1 to {MAX_ID}",
            hint="fix the file by hand",
        )
    extra = {k: v for k, v in record.items() if k not in KNOWN}
    if any(isinstance(v, dict | list) for v in extra.values()) and too_deep(extra, 1):
        raise CorruptTask(f"{where}: nested deeper than {MAX_DEPTH} levels", hint="fix the file by hand")
    notes = record.get("annotations") or []
    if not isinstance(notes, list) or not all(
        isinstance(n, dict) and isinstance(n.get("entry"), str) and isinstance(n.get("description"), str)
        for n in notes
    ):
        raise CorruptTask(f"{where}: annotations must be {{entry, description}} objects", hint="fix the file")
    status = _str(record, "status", where, STATUSES) or "pending"
    start = _str(record, "start", where)
    return dict(
        uuid=str(_str(record, "uuid", where)),
        id=ident,
        description=str(_str(record, "description", where)),
        entry=str(record["entry"]),
        modified=str(record.get("modified") or record["entry"]),
        status=status,
        state=_str(record, "michi_state", where, STATES) or state_for(status, start),
        priority=_str(record, "priority", where, PRIORITIES),
        project=_str(record, "project", where),
        tags=_strings(record, "tags", where),
        depends=_strings(record, "depends", where),
        start=start,
        end=_str(record, "end", where),
        annotations=tuple(Annotation(n["entry"], n["description"]) for n in notes),
        assignee=_agent(record, where),
        claim_expires=_str(record, "michi_claim_expires", where),
        version=version,
        extra=extra,
    )


def check(record: dict[str, Any], where: str) -> None:
    """Raise CorruptTask if `record`, with any id and version, is one no task file may hold: an import
    checks each record this way before the first one lands (README)."""
    _fields({**record, "michi_id": 1, "michi_version": 1}, where)


def from_record(record: Any, where: str) -> Task:
    return Task(**_fields(record, where))


def record_of(record: Any, where: str) -> dict[str, Any]:
    """`to_record(from_record(record, where))` without the Task between: a cold read checks 50,000 files
    and keeps only their records (ADR 0015). The fields go to `to_record` as a namespace (C-built, a
    third of a Task's cost), so the file's shape is written down once."""
    return to_record(SimpleNamespace(**_fields(record, where)))  # type: ignore[arg-type]  # Task's fields


def decoded(data: bytes, path: str) -> Any:
    """The JSON value of a task file's bytes, within the caps (size, nesting, no NaN, no lone surrogate),
    or CorruptTask naming the file; not yet checked as a task."""
    if len(data) > MAX_TASK_BYTES:
        raise CorruptTask(
            f"{path}: larger than the {MAX_TASK_BYTES:,} bytes a task file may hold",
            hint="shorten it by hand (long notes belong in files the task names)",
        )
    if any(marker in data for marker in CONFLICT_MARKERS):
        raise CorruptTask(
            f"{path}: has git conflict markers", hint="resolve the conflict by hand, then commit"
        )
    try:
        text = data.decode("utf-8")
        value = strict_json(text)
    except RecursionError:  # deeper than the interpreter's stack: never let it escape (ADR 0006)
        raise CorruptTask(f"{path}: nested deeper than {MAX_DEPTH} levels", hint="fix the file") from None
    except ValueError as exc:  # bad UTF-8 or JSON, NaN or Infinity, an integer of thousands of digits
        raise CorruptTask(f"{path}: not valid JSON ({exc})", hint="fix the file by hand") from None
    if lone_surrogate(text, value):
        raise CorruptTask(f"{path}: {LONE_SURROGATE}", hint="fix the file by hand")
    return value


# JSON lets an escape (`\ud800`-`\udfff`) name half of a surrogate pair alone, which is no character: text
# holding one cannot be encoded, so it could be neither printed nor written back (ADR 0006).
LONE_SURROGATE = "holds a lone surrogate (an escape such as \\ud800 that is no character)"
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def lone_surrogate(text: str, value: Any) -> bool:
    """Does `value`, decoded from the JSON `text`, hold a lone surrogate in a key or a string? Only an
    escape in the text can make one, so a text without one costs a substring search."""
    if "\\u" not in text or not _SURROGATE_ESCAPE.search(text):
        return False
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _named_right(uuid: str, path: str) -> None:
    if not path.endswith(f"/{uuid}.json") and path != f"{uuid}.json":
        raise CorruptTask(f"{path}: uuid {uuid} does not match the file name", hint="rename or fix it")


def loads(data: bytes, path: str) -> Task:
    task = from_record(decoded(data, path), path)
    _named_right(task.uuid, path)
    return task


def loads_record(data: bytes, path: str) -> dict[str, Any]:
    """`to_record(loads(data, path))`, the same checks, no Task built."""
    record = record_of(decoded(data, path), path)
    _named_right(record["uuid"], path)
    return record


def from_trusted(record: dict[str, Any]) -> Task:
    """Rebuild a task from a record that `from_record` already accepted (the index cache): no re-validation,
    because the cache answers `list` at 10,000 tasks and must stay faster than Taskwarrior."""
    get = record.get
    return Task(
        uuid=record["uuid"],
        id=record["michi_id"],
        description=record["description"],
        entry=record["entry"],
        modified=get("modified") or record["entry"],
        status=record["status"],
        state=get("michi_state") or state_for(record["status"], get("start")),
        priority=get("priority"),
        project=get("project"),
        tags=tuple(get("tags") or ()),
        depends=tuple(get("depends") or ()),
        start=get("start"),
        end=get("end"),
        annotations=tuple(Annotation(n["entry"], n["description"]) for n in get("annotations") or ()),
        assignee=get("michi_assignee"),
        claim_expires=get("michi_claim_expires"),
        version=get("michi_version", 1),
        extra={k: v for k, v in record.items() if k not in KNOWN},
    )
