"""A task's `--json` text straight from its file record: `compact(view_record(rec, path, index))` byte for
byte, without the view dict or the encoder's pieces (about a third of their time: 50,000 on a cold
`list`, ADR 0015), keys in `VIEW_KEYS` order; any value not of the types a normalised record holds
takes the encoder's way, which decides.
"""

from __future__ import annotations

import json
from typing import Any

from michi.tasks.domains import domain_of
from michi.tasks.index import Index
from michi.tasks.query import compact, view_record

_S = json.encoder.encode_basestring  # what `compact`'s encoder writes a string with (no ASCII escaping)
_NOTE = '{"entry":%s,"description":%s}'


def text(rec: dict[str, Any], path: str, index: Index, domain: str | None = None) -> str:
    """The task's `--json` text, as `compact(view_record(rec, path, index))` gives it; `domain` is
    `domain_of(path)` when the caller has it already."""
    try:
        return _text(rec, index, domain_of(path) if domain is None else domain)
    except TypeError:  # a value of another type: the encoder says how it looks, or raises as before
        return compact(view_record(rec, path, index))


def _text(rec: dict[str, Any], index: Index, domain: str) -> str:
    get, s = rec.get, _S
    ident, version = rec["michi_id"], get("michi_version", 1)
    priority, project, assignee = get("priority"), get("project"), get("michi_assignee")
    expires, start, end = get("michi_claim_expires"), get("start"), get("end")
    tags, depends, notes = get("tags"), get("depends"), get("annotations")
    if type(ident) is not int or type(version) is not int or not isinstance(tags, list | tuple | None):
        raise TypeError
    if not tags:
        tag_text = "[]"
    elif len(tags) == 1:
        tag_text = "[" + s(tags[0]) + "]"
    else:
        tag_text = "[" + ",".join(map(s, tags)) + "]"
    # An f-string, not `%` over VIEW_KEYS: half the time. Tested equal to the encoder's text.
    return (
        f'{{"id":{ident},"uuid":{s(rec["uuid"])},"description":{s(rec["description"])},'
        f'"status":{s(rec["status"])},"state":{s(rec["michi_state"])},'
        f'"priority":{"null" if priority is None else s(priority)},'
        f'"project":{"null" if project is None else s(project)},"tags":{tag_text},'
        f'"depends":{_ids(index.ids_of(tuple(depends))) if depends else "[]"},'
        f'"assignee":{"null" if assignee is None else s(assignee)},'
        f'"claim_expires":{"null" if expires is None else s(expires)},"version":{version},'
        f'"domain":{s(domain)},"entry":{s(rec["entry"])},'
        f'"modified":{s(get("modified") or rec["entry"])},"start":{"null" if start is None else s(start)},'
        f'"end":{"null" if end is None else s(end)},"annotations":{_notes(notes) if notes else "[]"}}}'
    )


def _ids(values: list[int | str]) -> str:
    out = []
    for value in values:
        if isinstance(value, str):
            out.append(_S(value))
        elif type(value) is int:  # not a bool
            out.append(int.__repr__(value))
        else:
            raise TypeError
    return "[" + ",".join(out) + "]"


def _notes(notes: list[dict[str, Any]]) -> str:
    out = []
    for note in notes:
        if type(note) is not dict or tuple(note) != ("entry", "description"):
            raise TypeError
        out.append(_NOTE % (_S(note["entry"]), _S(note["description"])))
    return "[" + ",".join(out) + "]"
