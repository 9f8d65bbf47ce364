"""Sorted tables on disk read a block at a time (ADR 0015): a lookup reads a small head and the one or two
blocks that can hold its key, not the whole file.

A file is `MBLK`, the head's length and CRC-32, the head (marshal: the caller's value, and per table each
block's first key, offset, length and CRC-32), then the blocks (marshal: a list of rows, each a tuple whose
first item is the key; rows sorted). Every block is checked against its CRC-32 when read: damage raises
`Damaged` (the caller then answers the full way and rebuilds the file), never a wrong row. The file is
mapped, so a block costs no read of the rest; files are replaced atomically, so a mapped one never changes.
"""

from __future__ import annotations

import marshal
import mmap
import os
import zlib
from bisect import bisect_left
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from michi.atomic import open_regular, write_cache

MAGIC = b"MBLK"
ROWS = 256  # rows per block: a lookup decodes about this many tuples
# (first keys, offsets, lengths, CRC-32s) of one table's blocks
Directory = tuple[list[Any], list[int], list[int], list[int]]


class Damaged(Exception):
    """The file is not what its checksums say: do not believe any of it."""


def dumps(head: Any, tables: Mapping[str, Sequence[tuple[Any, ...]]], rows: int | None = None) -> bytes:
    """The file holding `head` and `tables` (name -> rows, sorted by their first item), `rows` rows a
    block (`ROWS`)."""
    rows = rows or ROWS
    body: list[bytes] = []
    at = 0
    dirs: dict[str, Directory] = {}
    for name, table in tables.items():
        firsts, offsets, lengths, crcs = [], [], [], []
        for start in range(0, len(table), rows):
            chunk = list(table[start : start + rows])
            data = marshal.dumps(chunk, 2)  # no back-references: ~1.7x quicker to write
            firsts.append(chunk[0][0])
            offsets.append(at)
            lengths.append(len(data))
            crcs.append(zlib.crc32(data))
            body.append(data)
            at += len(data)
        dirs[name] = (firsts, offsets, lengths, crcs)
    top = marshal.dumps((head, dirs))
    return MAGIC + len(top).to_bytes(4, "big") + zlib.crc32(top).to_bytes(4, "big") + top + b"".join(body)


def write(path: Path, head: Any, tables: Mapping[str, Sequence[tuple[Any, ...]]]) -> None:
    """Best effort and atomic, as the other caches: a file that cannot be written is rebuilt later."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_cache(path, dumps(head, tables))
    except OSError:
        pass


class Table:
    """One file, mapped. `head` is the caller's value; `find` and `prefixed` read only the blocks that
    can hold the key; `rows` reads them all."""

    def __init__(self, data: bytes | mmap.mmap) -> None:
        if len(data) < 12 or data[:4] != MAGIC:
            raise Damaged("not a block file")
        size = int.from_bytes(data[4:8], "big")
        top = data[12 : 12 + size]
        if len(top) != size or zlib.crc32(top) != int.from_bytes(data[8:12], "big"):
            raise Damaged("head")
        try:
            self.head, self._dirs = marshal.loads(top)
        except (ValueError, EOFError, TypeError) as exc:
            raise Damaged("head") from exc
        self._data, self._base = data, 12 + size
        self._read: dict[tuple[str, int], list[tuple[Any, ...]]] = {}
        if not isinstance(self._dirs, dict):
            raise Damaged("head")

    @classmethod
    def open(cls, path: Path) -> Table | None:
        """The table in `path`; None when it is missing, empty or its head is damaged."""
        try:
            fd, st = open_regular(path)  # not a FIFO or a device put there: it would hang or never end
        except OSError:
            return None
        try:
            if st.st_size < 12:
                return None
            return cls(mmap.mmap(fd, 0, access=mmap.ACCESS_READ))
        except (OSError, ValueError, Damaged):
            return None
        finally:
            os.close(fd)

    def _block(self, name: str, i: int) -> list[tuple[Any, ...]]:
        """Block `i` of table `name`, checked; each is decoded once per process (a list's whole
        rewrite looks up every node of another table in block order)."""
        rows = self._read.get((name, i))
        if rows is None:
            rows = self._read[name, i] = self._decode(name, i)
        return rows

    def _decode(self, name: str, i: int) -> list[tuple[Any, ...]]:
        _firsts, offsets, lengths, crcs = self._dirs[name]
        start = self._base + offsets[i]
        raw = self._data[start : start + lengths[i]]
        if len(raw) != lengths[i] or zlib.crc32(raw) != crcs[i]:
            raise Damaged(f"block {i} of {name}")
        try:
            rows = marshal.loads(raw)
        except (ValueError, EOFError, TypeError) as exc:
            raise Damaged(f"block {i} of {name}") from exc
        if not isinstance(rows, list):
            raise Damaged(f"block {i} of {name}")
        return rows

    def _scan(self, name: str, key: Any, past: Callable[[Any], bool]) -> Iterator[tuple[Any, ...]]:
        """Rows from the block that can hold the first row at `key` on, until a block whose first key is
        `past` it (a key repeated across blocks begins in the block before the first whose first key it
        is). A key of the wrong type is damage too."""
        try:
            firsts = self._dirs[name][0]
            start = max(bisect_left(firsts, key) - 1, 0)
            for i in range(start, len(firsts)):
                if i > start and past(firsts[i]):
                    return
                rows = self._block(name, i)
                # Within the first block, from the first row at `key` (a row is more than `(key,)`).
                yield from rows[bisect_left(rows, (key,)) :] if i == start else rows
        except (KeyError, TypeError, IndexError, AttributeError) as exc:
            raise Damaged(name) from exc

    def find(self, name: str, key: Any) -> list[tuple[Any, ...]]:
        """The rows whose key is `key`."""
        found = []
        for row in self._scan(name, key, lambda first: first > key):
            if row[0] == key:
                found.append(row)
            elif row[0] > key:
                break
        return found

    def prefixed(self, name: str, prefix: str) -> list[tuple[Any, ...]]:
        """The rows whose key (a string) starts with `prefix`."""

        def past(first: str) -> bool:
            return first > prefix and not first.startswith(prefix)

        found = []
        for row in self._scan(name, prefix, past):
            if row[0].startswith(prefix):
                found.append(row)
            elif past(row[0]):
                break
        return found

    def has(self, name: str) -> bool:
        return name in self._dirs

    def rows(self, name: str) -> Iterator[tuple[Any, ...]]:
        try:
            count = len(self._dirs[name][0])
        except (KeyError, TypeError, IndexError) as exc:
            raise Damaged(name) from exc
        for i in range(count):
            yield from self._block(name, i)
