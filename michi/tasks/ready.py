"""New tasks of an import made ready outside the lock (ADR 0015): each checked (`record_of`) and its file
dumped with a stand-in id, so the apply function only puts the real id in (it is known only on the fresh
tree, inside the lock). The import readies the next chunk while git pushes and checks out this one.

The apply function stays what its params say: it uses a ready task only for the very record object it
was readied from (a mutation replayed from the journal has other objects and works the task out itself),
and the answer is the same either way (tested)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from michi.tasks import serialization, twocore
from michi.tasks.errors import CorruptTask
from michi.tasks.model import MAX_ID, MAX_TASK_BYTES

STAND_IN = 1  # the id a ready record holds until the apply function gives it its own
_STAND_IN = b"%d" % STAND_IN
_ID_KEY = b',\n  "michi_id": '


class Ready(NamedTuple):
    record: dict[str, Any] | None  # the file's record, michi_id STAND_IN; None when `problem`
    head: bytes  # the file up to the id
    tail: bytes  # the file after it
    problem: str | None  # why no file can hold it (CorruptTask's message), as the apply function says it


_READY: dict[int, tuple[dict[str, Any], Ready]] = {}  # id(item) -> (the item, kept alive; its Ready)
_DRAINED: list[Callable[[], None]] = []  # called once every ready task has been taken (`notify`)


def make(record: dict[str, Any]) -> Ready | None:
    """`record` (an import item's, normalised) as a new task: what `create.import_tasks` would make of it
    with any id; None when the file's text does not split around the id as expected."""
    uuid = str(record["uuid"])
    try:
        final = serialization.record_of(
            {**record, "michi_id": STAND_IN, "michi_version": 1}, f"import {uuid}"
        )
    except CorruptTask as exc:
        return Ready(None, b"", b"", exc.message)
    data = serialization.dumps_record(final)
    # The id is the second key (`to_record`'s order), after the uuid, whose JSON holds no raw newline.
    found = data.find(_ID_KEY)
    at = found + len(_ID_KEY)
    if (
        found < 0
        or list(final)[:2] != ["uuid", "michi_id"]
        or data[at : at + len(_STAND_IN) + 1] != _STAND_IN + b","
    ):
        return None
    return Ready(final, data[:at], data[at + len(_STAND_IN) :], None)


_NEXT: list[int] = []  # the id the last chunk's apply function would have given next (`expect`)


def prepare(items: list[dict[str, Any]]) -> list[bytes]:
    """Ready the tasks of an import chunk (its items, `{"record", "domain"}`) for `take`. Returns the
    files they would be if every one were new and the ids ran on from the last chunk's (`expect`), as
    they do when nothing else lands between two chunks: their blobs can be made ahead (none if no
    chunk landed yet). A wrong guess costs nothing but the guess: the apply function decides the ids."""
    files: list[bytes] = []
    ident = _NEXT[-1] if _NEXT else None
    # Half of them in a forked child when no other thread runs (the first chunk, made ready before
    # anything else can run beside it): the second core, not the read-ahead thread's turns (ADR 0015).
    made = twocore.halves([item["record"] for item in items], _made)
    for item, plain in zip(items, made, strict=True):
        if plain is None:
            continue
        found = Ready(*plain)
        _READY[id(item)] = (item, found)
        if ident is not None and found.problem is None and ident <= MAX_ID:
            data = found.head + b"%d" % ident + found.tail
            if len(data) <= MAX_TASK_BYTES:  # else the apply function refuses it, and takes no id
                files.append(data)
                ident += 1
    return files


def _made(records: Sequence[dict[str, Any]]) -> list[tuple[Any, ...] | None]:
    """`make` of each record, as plain tuples (what a child process sends back marshalled)."""
    return [None if (found := make(record)) is None else tuple(found) for record in records]


def expect(ident: int) -> None:
    """The id the next new task of an import would get (the apply function says, at the end of a chunk)."""
    _NEXT[:] = [ident]


def take(item: dict[str, Any]) -> Ready | None:
    """The Ready made from this very item, once; None if there is none."""
    found = _READY.pop(id(item), None)
    while not _READY and _DRAINED:
        _DRAINED.pop()()
    return found[1] if found is not None and found[0] is item else None


def notify(hook: Callable[[], None]) -> None:
    """Call `hook` once, when no ready task is left to take (now, if none is): the apply function has
    used this chunk's."""
    _DRAINED[:] = [hook]
    while not _READY and _DRAINED:
        _DRAINED.pop()()


def forget() -> None:
    _READY.clear()
    _DRAINED.clear()
    _NEXT.clear()
