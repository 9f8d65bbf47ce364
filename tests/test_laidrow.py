"""A cold half's row straight from a file in michi's layout (`michi.tasks.laidrow`, ADR 0015): the record
the file reads as and the row `table.row` makes of it, or nothing (the usual way then decides)."""

from __future__ import annotations

import itertools
import random
import sys
from typing import Any

import pytest
from test_fast_paths import _PLAIN, _changed_files, _file_bytes, _pretty

from michi.tasks import laidrow, normal, serialization, table, urgency
from michi.tasks.index import Index
from michi.tasks.links import Links

UUID = "00000000-0000-4000-8000-000000000001"
PATHS = [
    f".tasks/00/{UUID}.json",
    f"d/.tasks/{UUID}.json",
    f'a "q" \\ é/.tasks/00/{UUID}.json',  # a domain JSON must escape
    f"{UUID}.json",
    f".tasks/00/x{UUID}.json",  # not named by its uuid: corrupt
]
OID = "0123456789abcdef0123456789abcdef01234567"
STATES = [("pending", "todo"), ("pending", "in_progress"), ("waiting", "review"), ("completed", "done")]
STATES += [("deleted", "deleted"), ("pending", "review"), ("waiting", "todo")]


def _usual(data: bytes, path: str) -> tuple[list[tuple[str, Any]], tuple[Any, ...]] | str:
    """What a cold half made of the file before `laidrow`: its record (items, in order) and row, or the
    problem."""
    try:
        record = normal.loads_record(data, path)
    except serialization.CorruptTask as exc:
        return exc.message
    half = Index(None, {path: (OID, record, None)})
    return list(record.items()), table.row(path, OID, record, half, Links(Index(None, {})), None)


def _files() -> list[bytes]:
    rng = random.Random(5)
    files = _changed_files(_PLAIN) + _file_bytes(random.Random(13))
    optional = ("priority", "project", "tags", "start", "end", "michi_assignee", "michi_claim_expires")
    texts = ["x", "é \u2028 \x7f '<", "a > b", "ünï", "tab\there"]  # a raw tab: no layout (escaped)
    for n in range(1 << len(optional)):  # each optional key there or not
        record = {k: v for k, v in _PLAIN.items() if k != "depends"}
        record = {k: v for k, v in record.items() if k not in optional or n >> optional.index(k) & 1}
        record["status"], record["michi_state"] = rng.choice(STATES)
        if "tags" in record:
            record["tags"] = rng.choice([["a"], ["next"], ["a", "next"], ["a", "b", "c"], ["é", "x y"]])
        record["description"] = rng.choice(texts)
        record["entry"] = rng.choice(["20240101T000000Z", "19991231T235960Z", "20240229T120101Z"])
        files.append(_pretty(serialization.record_of(record, "f")))
    return files + [f.replace(b"\n", b"\r\n") for f in files[:40]] + [f + b"\n\n" for f in files[:40]]


def test_a_laid_out_file_gives_the_record_and_row_the_usual_way_gives() -> None:
    taken = refused = 0
    for data, path in itertools.product(_files(), PATHS):
        got = laidrow.row(data, path, OID)
        if got is None:
            refused += 1
            continue
        taken += 1
        usual = _usual(data, path)
        assert not isinstance(usual, str), (data, path)
        record, row = got
        assert list(record.items()) == usual[0], data  # the same record, keys in the same order
        assert all(key is sys.intern(key) for key in record)
        assert row == usual[1], (data, path)
        assert repr(row) == repr(usual[1])  # the same floats (bit for bit), types and text
    assert taken > 1000
    assert refused > 500  # depends, annotations, extra keys, escapes, other spellings, corrupt files


def test_a_file_with_depends_is_left_to_the_usual_way() -> None:
    record = dict(_PLAIN)
    assert record.get("depends")
    data = _pretty(serialization.record_of(record, "f"))
    assert normal._LAYOUT.fullmatch(data.decode()) is not None  # in the layout, yet
    assert laidrow.row(data, PATHS[0], OID) is None  # its row shows other tasks: `table.row`'s


@pytest.mark.parametrize("entry", ["20240101T000000Z", "20231231T235961Z"])
def test_an_epoch_remembered_or_not_is_urgency_s(entry: str) -> None:
    record = {k: v for k, v in _PLAIN.items() if k != "depends"}
    record["entry"] = entry
    data = _pretty(serialization.record_of(record, "f"))
    urgency._days.clear()  # the day not remembered yet: `epoch` computes it
    first = laidrow.row(data, PATHS[0], OID)
    second = laidrow.row(data, PATHS[0], OID)  # remembered
    assert first is not None and second is not None
    assert first[1][table.COL["born"]] == second[1][table.COL["born"]] == urgency.epoch(entry)


def test_a_waiting_status_without_a_wait_is_no_waiting_term() -> None:
    """Taskwarrior 2.6 reads waiting from the `wait` date (ADR 0007): a laid-out file, which has none, gets
    the row `table.row` makes, without the term; a file with a `wait` is left to the usual way, whose
    row keeps the date for `list` to read at its `now`."""
    record = {k: v for k, v in _PLAIN.items() if k != "depends"}
    record["status"], record["michi_state"] = "waiting", "todo"
    data = _pretty(serialization.record_of(record, "f"))
    got = laidrow.row(data, PATHS[0], OID)
    usual = _usual(data, PATHS[0])
    assert got is not None and not isinstance(usual, str)
    assert repr(got[1]) == repr(usual[1])
    pending = _usual(_pretty(serialization.record_of({**record, "status": "pending"}, "f")), PATHS[0])
    assert not isinstance(pending, str) and pending[1][table.COL["fixed"]] == got[1][table.COL["fixed"]]
    assert got[1][table.COL["wait"]] is None
    wait = "20990101T000000Z"
    data = _pretty(serialization.record_of({**record, "wait": wait}, "f"))
    assert laidrow.row(data, PATHS[0], OID) is None
    usual = _usual(data, PATHS[0])
    assert not isinstance(usual, str) and usual[1][table.COL["wait"]] == urgency.epoch(wait)
