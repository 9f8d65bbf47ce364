"""git's index file, every entry's name and where it starts, read in one walk (ADR 0015).

Finding one entry searches the whole file twice (it must be found in exactly one place,
`michi.git.indexfile`): ~3 ms at 50,000 entries. A checkout move that lags many commits behind the remote
(other clones landed dozens of tasks since) looks for dozens of paths, and those searches took ~150 ms
beside the push. From `WALK_FROM` paths on, the entries are walked once instead (~20 ms at 50,000), as git
reads them: each entry's fixed part, its name, NULs up to a multiple of 8. The walk is itself the proof of
where each entry starts, and its names are in git's order (checked), so each path is then a bisection.
Version 2 only, names under 4,095 bytes: anything else is not walked (None), and the callers search.
"""

from __future__ import annotations

import bisect
import itertools
import operator
import os
from dataclasses import dataclass

WALK_FROM = 5  # paths looked for: from here one walk costs less than two searches per path

_HEAD = 12  # "DIRC", version, entry count


@dataclass(frozen=True)
class Entries:
    """The index's entries in file order: each name, where its entry starts, and where the last one ends."""

    names: list[bytes]
    starts: list[int]
    end: int
    fixed: int  # an entry's bytes before its name: stat data, object id, flags

    def only(self, name: bytes) -> int | None:
        """Where the one entry named `name` starts; None when there is none, or several (a conflict's
        stages)."""
        i = bisect.bisect_left(self.names, name)
        if i == len(self.names) or self.names[i] != name:
            return None
        if i + 1 < len(self.names) and self.names[i + 1] == name:
            return None
        return self.starts[i]

    def named(self, name: bytes) -> bool:
        i = bisect.bisect_left(self.names, name)
        return i < len(self.names) and self.names[i] == name

    def inside(self, name: bytes) -> bool:
        """Is there an entry inside `name`, taken as a folder?"""
        folder = name + b"/"
        i = bisect.bisect_left(self.names, folder)
        return i < len(self.names) and self.names[i].startswith(folder)

    def insertion_after_folder_file(self, name: bytes) -> int | None:
        """Where a new entry `name` goes (before the first entry after it in git's order, bytes compared),
        when the entry before it there is another file of its folder; None when one of that name is there,
        or it would be its folder's first (a staged move adds entries only beside others,
        `michi.git.splice`)."""
        folder, slash, _file = name.rpartition(b"/")
        i = bisect.bisect_left(self.names, name)
        if not slash or i == 0 or (i < len(self.names) and self.names[i] == name):
            return None
        previous = self.names[i - 1]
        if previous.rpartition(b"/")[0] != folder:
            return None
        return self.starts[i] if i < len(self.names) else self.end


def walk_for(data: bytes | bytearray, width: int, paths: int) -> Entries | None:
    """The entries of `data` walked, when `paths` are to be looked up in it (from `WALK_FROM` on): else
    None, and the caller searches for each."""
    return walk(data, width) if paths >= WALK_FROM else None


def walk(data: bytes | bytearray, width: int) -> Entries | None:
    """Every entry of the version 2 index file `data` (object ids of `width` bytes); None when it is not
    one, when an entry does not fit in the file, when its extensions do not end at its checksum, or when
    the names are not in git's order."""
    if len(data) < _HEAD + width or data[:4] != b"DIRC" or int.from_bytes(data[4:8], "big") != 2:
        return None
    data = bytes(data)  # a bytearray's slices would be bytearrays: not comparable with bytes, nor hashable
    count = int.from_bytes(data[8:12], "big")
    fixed = 40 + width + 2
    high, low = fixed - 2, fixed - 1
    last = len(data) - width  # the checksum
    names: list[bytes] = []
    starts: list[int] = []
    name_of, start_of = names.append, starts.append
    flags_seen = 0
    at = _HEAD
    try:
        for _ in range(count):
            high_byte = data[at + high]
            flags_seen |= high_byte
            length = (high_byte & 0x0F) << 8 | data[at + low]
            begins = at + fixed
            name_of(data[begins : begins + length])
            start_of(at)
            at += (fixed + length + 8) & ~7
    except IndexError:
        return None
    # 0x40: an extended entry (version 3 only), 0x0F with 0xFF: a name of 4,095 bytes or more, whose length
    # the flags do not hold; the walk above read neither right.
    if flags_seen & 0x40 or not _extensions_fill(data, at, last) or 0xFFF in map(len, names):
        return None
    if not all(map(operator.le, names, itertools.islice(names, 1, None))):
        return None  # not as git writes it: bisecting would not find what is there
    return Entries(names, starts, at, fixed)


# The index file as one reader read it: its stat data, its bytes, and its entries if they were walked.
IndexRead = tuple[os.stat_result, bytes, Entries | None]


def _extensions_fill(data: bytes, at: int, last: int) -> bool:
    """Do extensions (each a 4-byte signature and a 4-byte size, then that many bytes) fill `data` from
    `at` exactly to `last` (the checksum)? Else the header's entry count is not the entries' own."""
    while at < last:
        if at + 8 > last:
            return False
        at += 8 + int.from_bytes(data[at + 4 : at + 8], "big")
    return at == last
