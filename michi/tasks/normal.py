"""A cold read's fast path (ADR 0015): a task file already in the form michi writes is its own record.

`serialization.loads_record` checks every field and rebuilds the record (`record_of`), ~40 us a file: at
50,000 files, most of a cold `list`. A file michi wrote (or one it normalised) is already that record, so
`loads_record` here decodes it and asks only whether it *is* in normal form: known keys in `KEY_ORDER`,
then extra keys sorted with plain values; no empty value; every value of the type and range the checks
accept; dates in the usual `YYYYMMDDTHHMMSSZ` form. Such a record is what the full path returns (tested
on tricky records). Anything else, a file that fails or one merely spelt differently, takes the full path,
which decides and words the problem exactly as before. Most files are read without the decoder at all:
one match of the layout michi writes them in (`_LAYOUT`) gives their values (tested equal).
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from typing import Any

from michi.agent import agent_problem
from michi.tasks import serialization
from michi.tasks.model import MAX_ID, MAX_TASK_BYTES, PRIORITIES, STATES, STATUSES, plain_date, plain_day

_DECODER = serialization.strict_decoder()
# The scanner `decode` runs after skipping whitespace (set by JSONDecoder, untyped in typeshed).
_SCAN: Callable[[str, int], tuple[Any, int]] = _DECODER.scan_once  # type: ignore[attr-defined]
_MARKERS = serialization.CONFLICT_MARKERS
# A byte of each marker (`<`, `=`, `>`): most files hold none of the three, which one `memchr` each finds
# out ten times quicker than looking for the markers themselves (~2 us a file; ADR 0015).
_LT, _EQ, _GT = (marker.strip()[0] for marker in _MARKERS)
_ORDER = {key: n for n, key in enumerate(serialization.KEY_ORDER)}
# What `to_record` always writes: the required keys and those it fills in when the file leaves them out.
_ALWAYS = frozenset((*serialization.REQUIRED, "michi_state", "modified", "michi_version"))
_STATUSES, _STATES, _PRIORITIES = frozenset(STATUSES), frozenset(STATES), frozenset(PRIORITIES)
_SCALARS = (str, int, float, bool, type(None))
# (the known keys, interned; those to check, each with its check; the extra keys)
Shape = tuple[tuple[str, ...], tuple[tuple[str, Callable[[Any], bool]], ...], tuple[str, ...]]
_shapes: dict[tuple[str, ...], Shape | None] = {}
_agents: dict[str, bool] = {}


# The optional fields after `modified`, in the order michi writes them: dates, except the assignee.
_TAIL_KEYS = ("start", "end", "michi_assignee", "michi_claim_expires")
_NO_TAIL = [None, None, None, None]


def loads_record(data: bytes, path: str) -> dict[str, Any]:
    """`serialization.loads_record(data, path)`: the same record, or the same `CorruptTask`."""
    record = fast(data)
    if record is not None:
        uuid = record["uuid"]
        if path.endswith(f"/{uuid}.json") or path == f"{uuid}.json":  # `_named_right`
            return record
    return serialization.loads_record(data, path)


def fast(data: bytes) -> dict[str, Any] | None:
    """The file's record when it is already in normal form, else None (the full path decides)."""
    if len(data) > MAX_TASK_BYTES:
        return None
    if (_LT in data or _EQ in data or _GT in data) and (
        _MARKERS[0] in data or _MARKERS[1] in data or _MARKERS[2] in data
    ):
        return None
    try:
        text = data.decode("utf-8")
        if text[:1] != "{":
            return None
        laid = _LAYOUT.fullmatch(text)
        if laid is not None:
            record = _laid_out(laid.groups())
            if record is not None:
                return record
        value, end = _SCAN(text, 0)
    except (ValueError, StopIteration, RecursionError):
        return None
    if text[end:].strip(" \t\n\r") or type(value) is not dict:  # JSON's whitespace only after it
        return None
    if "\\u" in text and serialization.lone_surrogate(text, value):  # `decoded`: a corrupt file
        return None
    keys = normal(value)
    if keys is None:
        return None
    # The same record with the known keys interned, as `to_record` writes them (extra keys stay the
    # decoder's, as there): the decoder makes new key strings for every file, and 650,000 of them made
    # the index cache 18% larger and 45% slower to load.
    record = dict(zip(keys, value.values(), strict=len(keys) == len(value)))
    if len(keys) < len(value):
        record.update(list(value.items())[len(keys) :])
    notes = record.get("annotations")
    if notes:
        record["annotations"] = [{"entry": n["entry"], "description": n["description"]} for n in notes]
    return record


def normal(rec: dict[str, Any]) -> tuple[str, ...] | None:
    """`rec`'s known keys (interned) when `serialization.record_of(rec)` would accept `rec` and return it
    unchanged, key order included (a decoded JSON object: builtins only); None otherwise."""
    keys = tuple(rec)
    try:
        shape = _shapes[keys]
    except KeyError:
        shape = _shape(keys)
        if len(_shapes) < 4096:
            _shapes[keys] = shape
    if shape is None:
        return None
    interned, checks, extra = shape
    uuid, ident, version, status, state = (
        rec["uuid"],
        rec["michi_id"],
        rec["michi_version"],
        rec["status"],
        rec["michi_state"],
    )
    if not (
        type(uuid) is str
        and uuid
        and type(ident) is int
        and 0 < ident <= MAX_ID
        and type(version) is int
        and 0 < version <= MAX_ID
        and type(status) is str
        and status in _STATUSES
        and type(state) is str
        and state in _STATES
        and _text(rec["description"])
    ):
        return None
    for key, check in checks:
        if not check(rec[key]):
            return None
    if extra and not all(type(rec[key]) in _SCALARS for key in extra):
        return None
    return interned


def _text(value: Any) -> bool:
    return type(value) is str and value != ""


def _priority(value: Any) -> bool:
    return type(value) is str and value in _PRIORITIES


def _strings(value: Any) -> bool:
    if type(value) is not list or not value:
        return False
    if len(value) == 1:  # the usual one tag: no generator
        return type(value[0]) is str
    return all(type(item) is str for item in value)


def _sorted_strings(value: Any) -> bool:
    return _strings(value) and value == sorted(value)


def _notes(value: Any) -> bool:
    if type(value) is not list or not value:
        return False
    for note in value:
        if type(note) is not dict or tuple(note) != ("entry", "description"):
            return False
        if type(note["entry"]) is not str or type(note["description"]) is not str:
            return False
    return True


def _agent(value: Any) -> bool:
    if type(value) is not str:
        return False
    ok = _agents.get(value)
    if ok is None:
        ok = agent_problem(value) is None
        if len(_agents) < 4096:
            _agents[value] = ok
    return ok


_CHECKS: dict[str, Callable[[Any], bool]] = {
    "priority": _priority,
    "project": _text,
    "tags": _strings,
    "depends": _sorted_strings,
    "entry": plain_date,
    "modified": plain_date,
    "start": plain_date,
    "end": plain_date,
    "annotations": _notes,
    "michi_assignee": _agent,
    "michi_claim_expires": plain_date,
}


def _shape(keys: tuple[str, ...]) -> Shape | None:
    """(the known keys to check, each with its check; the extra keys) of records with these keys in this
    order, or None when `to_record` would write them otherwise: a known key out of `KEY_ORDER`, an extra
    key before a known one or out of sorted order, or a key it always writes missing."""
    known = [k for k in keys if k in _ORDER]
    extra = list(keys[len(known) :])
    if keys[: len(known)] != tuple(known) or any(k in _ORDER for k in extra):
        return None
    if [_ORDER[k] for k in known] != sorted(_ORDER[k] for k in known) or extra != sorted(extra):
        return None
    if not set(known) >= _ALWAYS:
        return None
    checks = tuple((k, _CHECKS[k]) for k in known if k in _CHECKS)
    return tuple(sys.intern(k) for k in known), checks, tuple(extra)


# The layout michi writes (`serialization.dumps_record`: two-space indent, one key a line, `KEY_ORDER`),
# for the records most files hold: no annotations, no extra keys, no escapes in strings (so each string is
# the text between its quotes, and JSON allows no raw control characters in it). A file that matches is
# read by one match instead of the decoder and `normal`'s checks, at a third of their cost (ADR 0015);
# `_laid_out` makes the checks the pattern cannot, and builds the record `fast` would. Any other file, a
# normal one spelt otherwise included, takes the decoder's way.
def _one_of(values: tuple[str, ...]) -> str:
    return "(" + "|".join(map(re.escape, values)) + ")"


_STR, _TEXT = r'"([^"\\\x00-\x1f]*)"', r'"([^"\\\x00-\x1f]+)"'
_DATE = r'"([0-9]{8}T(?:[01][0-9]|2[0-3])[0-5][0-9](?:[0-5][0-9]|6[01])Z)"'  # `plain_date`, less the day
_LIST = r'\[\n((?:    "[^"\\\x00-\x1f]*",\n)*    "[^"\\\x00-\x1f]*")\n  \]'
_INT = "([1-9][0-9]{0,17})"
_LAYOUT = re.compile(
    r"\{\n"
    rf'  "uuid": {_TEXT},\n  "michi_id": {_INT},\n  "description": {_TEXT},\n'
    rf'  "status": "{_one_of(STATUSES)}",\n  "michi_state": "{_one_of(STATES)}",\n'
    rf'(?:  "priority": "{_one_of(PRIORITIES)}",\n)?(?:  "project": {_TEXT},\n)?'
    rf'(?:  "tags": {_LIST},\n)?(?:  "depends": {_LIST},\n)?'
    rf'  "entry": {_DATE},\n  "modified": {_DATE},\n(?:  "start": {_DATE},\n)?(?:  "end": {_DATE},\n)?'
    rf'(?:  "michi_assignee": {_STR},\n)?(?:  "michi_claim_expires": {_DATE},\n)?'
    rf'  "michi_version": {_INT}\n'
    r"\}[ \t\n\r]*"
)
_ITEMS = '",\n    "'  # between two items of a `_LIST`


def _laid_out(groups: tuple[Any, ...]) -> dict[str, Any] | None:
    """The record of a file `_LAYOUT` matched (its groups), when it is in normal form; else None."""
    (uuid, ident, text, status, state, priority, project, tags, depends, entry, modified, *rest) = groups
    ident, version, day = int(ident), int(rest[4]), plain_day
    if ident > MAX_ID or version > MAX_ID or not (day(entry[:8]) and day(modified[:8])):
        return None
    record = {"uuid": uuid, "michi_id": ident, "description": text, "status": status, "michi_state": state}
    if priority is not None:
        record["priority"] = priority
    if project is not None:
        record["project"] = project
    if tags is not None:
        record["tags"] = tags[5:-1].split(_ITEMS)
    if depends is not None:
        listed = depends[5:-1].split(_ITEMS)
        if listed != sorted(listed):
            return None
        record["depends"] = listed
    record["entry"] = entry
    record["modified"] = modified
    tail = rest[:4]
    if tail != _NO_TAIL:  # most files have none of these: one comparison
        for key, value in zip(_TAIL_KEYS, tail, strict=True):  # in the file's order (kept in the record)
            if value is not None:
                if not (_agent(value) if key == "michi_assignee" else day(value[:8])):
                    return None
                record[key] = value
    record["michi_version"] = version
    return record
