"""A cold table's row straight from a task file in michi's own layout (ADR 0015).

A cold `list` reads 50,000 files: each is checked into its record (`normal.loads_record`) and the record
made into its table row (`table.row`: its `--json` text by `viewtext`, its urgency terms by `urgency`), ~30
us a file. Most files are in the layout `dumps_record` writes, which one match of `normal._LAYOUT` reads
into its values; `row` makes the record *and* the row from those values at once (about a third less),
for a file without depends (a row with depends shows other tasks: `table.row` makes it, from the index).
The record is `normal.loads_record`'s and the row `table.row`'s for a task nothing depends on (a cold
half's rows, `coldtable`), byte for byte (tested on records with every optional field, in every state);
any other file, or one failing a check, gets None, and the caller takes the usual way, which decides.
"""

from __future__ import annotations

import json
import math
from typing import Any

from michi.tasks import normal, urgency
from michi.tasks.model import MAX_TASK_BYTES

_LAYOUT, _laid_out = normal._LAYOUT, normal._laid_out
_LT, _EQ, _GT = normal._LT, normal._EQ, normal._GT
_TAG_FACTORS, _PRIORITY, _epoch = urgency._FACTORS, urgency.PRIORITY, urgency.epoch
_day_starts = urgency._days  # a day (YYYYMMDD) -> its start in epoch seconds, as `epoch` remembers them
_ANNOTATIONS, _TAGS, _PROJECT = urgency.ANNOTATIONS, urgency.TAGS, urgency.PROJECT
_NEXT_TAG, _ACTIVE = urgency.NEXT_TAG, urgency.ACTIVE
_DONE = ("completed", "deleted")  # `urgency.terms`: no urgency
_quoted: dict[str, str] = {}  # a domain -> its JSON string (`encode_basestring`): few domains, 50,000 rows
_ESCAPE = json.encoder.encode_basestring  # what `compact`'s encoder writes a string with
_NULL, _NONE, _Q, _OPEN, _BETWEEN, _CLOSE = "null", "[]", '"', '["', '","', '"]'


def row(data: bytes, path: str, oid: str) -> tuple[dict[str, Any], tuple[Any, ...]] | None:
    """(`normal.loads_record(data, path)`, `table.row(path, oid, that record, ...)` of a task with no
    depends that no open task awaits), or None: not a file in michi's layout with no depends and no
    annotations, or not in normal form (the usual way then decides, and words any problem)."""
    if len(data) > MAX_TASK_BYTES:
        return None
    if _LT in data or _EQ in data or _GT in data:  # maybe a conflict marker: the usual way looks
        return None
    try:
        laid = _LAYOUT.fullmatch(data.decode("utf-8"))
    except ValueError:
        return None
    if laid is None:
        return None
    groups = laid.groups()
    uuid, _, text, status, state, priority, project, tags, depends, entry, modified = groups[:11]
    if depends is not None:
        return None
    if not (path.endswith(f"/{uuid}.json") or path == f"{uuid}.json"):  # `normal.loads_record`
        return None
    record = _laid_out(groups)
    if record is None:
        return None
    start, end, assignee, expires = groups[11:15]
    cut = path.rfind("/.tasks/")  # `domains.domain_of`
    domain = path[:cut] if cut >= 0 else "."
    quoted = _quoted.get(domain)
    if quoted is None:
        quoted = _quoted[domain] = _ESCAPE(domain)
    tag_list = record.get("tags") or ()
    # `viewtext._text`: the layout's strings hold no quote, backslash or control character, so each is
    # its JSON string between quotes (`encode_basestring` escapes nothing else; tested).
    json_text = (
        f'{{"id":{record["michi_id"]},"uuid":"{uuid}","description":"{text}",'
        f'"status":"{status}","state":"{state}",'
        f'"priority":{_NULL if priority is None else _Q + priority + _Q},'
        f'"project":{_NULL if project is None else _Q + project + _Q},'
        f'"tags":{_NONE if tags is None else _OPEN + _BETWEEN.join(tag_list) + _CLOSE},"depends":[],'
        f'"assignee":{_NULL if assignee is None else _Q + assignee + _Q},'
        f'"claim_expires":{_NULL if expires is None else _Q + expires + _Q},'
        f'"version":{record["michi_version"]},"domain":{quoted},"entry":"{entry}","modified":"{modified}",'
        f'"start":{_NULL if start is None else _Q + start + _Q},'
        f'"end":{_NULL if end is None else _Q + end + _Q},"annotations":[]}}'
    )
    # `urgency.terms` (not blocked, not blocking, no annotations, no due, scheduled or wait: the layout
    # has none, so a `waiting` status here is no waiting term), its terms added in its order: the same float.
    if status in _DONE:
        fixed, born = 0.0, None
    else:
        total = 0.0
        if "next" in tag_list:
            total += _NEXT_TAG
        if start or state == "in_progress":
            total += _ACTIVE
        total += _ANNOTATIONS * _TAG_FACTORS[0]
        count = len(tag_list)
        total += _TAGS * (_TAG_FACTORS[count] if count < 3 else 1.0)
        if project:
            total += _PROJECT
        total += _PRIORITY.get(priority or "", 0.0)
        # `urgency.epoch`: the pattern checked the clock's digits and ranges, and `_laid_out` the day.
        day = _day_starts.get(entry[:8])
        if day is None:
            made = _epoch(entry)  # remembers the day
            born = math.inf if made is None else made
        else:
            clock = int(entry[9:15])
            born = float(day + clock // 10000 * 3600 + clock // 100 % 100 * 60 + clock % 100)
        fixed = total
    return record, (
        record["michi_id"],
        domain,
        state,
        tuple(tag_list),
        project,
        assignee,
        json_text,
        path,
        oid,
        False,
        priority,
        entry,
        modified,
        fixed,
        born,
        None,
        None,
        None,
        0,
    )
