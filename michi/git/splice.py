"""A few entries of git's index file replaced, added or removed in its bytes (ADR 0015).

A staged checkout move (`michi.git.staged`) used to have git write the whole new index, 6 MB at 50,000
tasks, on a copy of the index beside the push: CPU spent for nothing whenever the push was refused. Here
git writes only the moved entries, into an index of their own, and they are spliced into the bytes of the
user's index as read before the push. Only the entries that change are looked at: an entry is found by
its object id, flags and path (exactly one place in the file, as `michi.git.indexfile` finds them); a
new one goes after the entry its folder's previous file has in the old commit, past any the index holds
beyond it in git's order (for many paths, both are looked up in one walk of the entries instead,
`michi.git.indexwalk`). The cache tree (`TREE`, git's record of which folders' trees it already knows)
is invalidated along each moved path, as git does when it changes an entry. Only version 2 indexes whose
one extension is `TREE` are read; anything else, or anything not as expected: None, and the caller has
git write the index as before.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, NamedTuple

from michi.git.indexfile import entry_key, walked_at

if TYPE_CHECKING:
    from michi.git.indexwalk import Entries

_HEAD = 12  # "DIRC", version, entry count
_FIXED = 62  # stat data (40), object id (20), flags (2): SHA-1; SHA-256 ids make it 74
_NAME_MASK = 0xFFF
_TREE_WINDOW = 1 << 16  # where the cache tree is looked for first: this many bytes before the checksum
_WALK_AT_MOST = 4096  # entries looked at past a new entry's neighbour before giving the move back to git


class _Tree:
    """A node of the `TREE` extension: a folder, the entries it covers (-1: not known), its tree's id."""

    __slots__ = ("count", "down", "name", "oid")

    def __init__(self, name: bytes, count: int, oid: bytes) -> None:
        self.name, self.count, self.oid = name, count, oid
        self.down: list[_Tree] = []


class Spliced(NamedTuple):
    """The new index file as its pieces, in order (memory views into the old file's bytes, the written
    entries, the new `TREE`; its checksum still the old one's: made when the entries get their files'
    final stat data), where each written entry starts in it (path -> offset), and where the first moved
    entry's bytes begin (the entry count before it may differ too: the checksum is made from the new
    bytes)."""

    pieces: list[bytes | memoryview]
    where: dict[str, int]
    first: int


def entries(data: bytes | bytearray, width: int) -> dict[str, bytes] | None:
    """Every entry of a small index file (the moved ones git wrote), path -> its bytes; None when the file
    is not a version 2 index of plain stage-0 entries."""
    if not _version_2(data) or len(data) < _HEAD + width:
        return None
    fixed = _fixed(width)
    found: dict[str, bytes] = {}
    at, end = _HEAD, len(data) - width
    for _ in range(int.from_bytes(data[8:12], "big")):
        if at + fixed > end:
            return None
        flags = int.from_bytes(data[at + fixed - 2 : at + fixed], "big")
        nul = data.find(b"\0", at + fixed, end)
        if flags & ~_NAME_MASK or nul < 0 or flags != min(nul - at - fixed, _NAME_MASK):
            return None  # a stage, an extended or assume-valid flag: not what a move writes
        size = _size(nul - at - fixed, width)
        found[bytes(data[at + fixed : nul]).decode("utf-8", "surrogateescape")] = bytes(data[at : at + size])
        at += size
    return found


class Plan:
    """Where the moved entries are, or go, in an index file; `build` makes the new file once git wrote
    them."""

    __slots__ = ("cuts", "data", "end", "removed", "tree", "width")

    def __init__(
        self,
        data: bytes | bytearray,
        width: int,
        cuts: list[tuple[int, int, str]],
        removed: frozenset[str],
        tree: bytes,
        end: int,
    ) -> None:
        self.data, self.width = data, width
        self.cuts = cuts  # (from, to, path) in the old file: to == from where an entry is added
        self.removed = removed  # paths whose entry goes
        self.tree = tree  # the `TREE` extension's data, invalidated along the moved paths
        self.end = end  # where the entries end

    def build(self, written: Mapping[str, bytes]) -> Spliced | None:
        """The new index with each moved path's entry as git wrote it (`written`: path -> entry bytes), as
        pieces to be written one after the other (not joined: a fresh 6 MB buffer costs ~3.5 ms of page
        faults); None when `written` is not every path that keeps an entry."""
        if set(written) != {c[2] for c in self.cuts} - self.removed:
            return None
        data = memoryview(self.data)
        count = int.from_bytes(data[8:12], "big")
        count += sum(1 for c in self.cuts if c[0] == c[1]) - len(self.removed)
        pieces: list[bytes | memoryview] = [data[:8], count.to_bytes(4, "big")]
        where: dict[str, int] = {}
        at, first, size = _HEAD, len(data), _HEAD
        for start, stop, path in self.cuts:
            pieces.append(data[at:start])
            size += start - at
            first = min(first, size)
            if path not in self.removed:
                where[path] = size
                pieces.append(written[path])
                size += len(written[path])
            at = stop
        pieces.append(data[at : self.end])
        pieces.append(b"TREE" + len(self.tree).to_bytes(4, "big") + self.tree)
        pieces.append(data[len(data) - self.width :])  # the old checksum: made again once entries are final
        return Spliced(pieces, where, first)


def plan(
    data: bytes | bytearray,
    width: int,
    old: Mapping[str, tuple[int, str] | None],
    new: Mapping[str, tuple[int, str] | None],
    before: Mapping[str, tuple[str, str]],
    walked: Entries | None = None,
) -> Plan | None:
    """Where, in `data` (the whole index), each moved path's entry is replaced, added or removed: `old` and
    `new` give each path's entry (mode, object id) in the commits moved from and to, None where it has
    none. `before`: for each added path, the file that precedes it in its folder in the commit moved from
    (path, object id). `walked`: the file's entries, when walked (`michi.git.indexwalk`): each path is
    looked up there instead of searched for, and an added one goes where the walk puts it, after another
    file of its folder (`before` is not read). None whenever an entry is not found exactly as expected."""
    if not _version_2(data) or len(data) < _HEAD + width:
        return None
    found = _tree_extension(data, width)
    if found is None:
        return None
    tree_at, root = found
    if walked is not None and (walked.end != tree_at or walked.fixed != _fixed(width)):
        return None  # the entries must end where the cache tree begins, walked with ids of this width
    cuts: list[tuple[int, int, str]] = []
    for path, entry in old.items():
        name = path.encode("utf-8", "surrogateescape")
        if entry is None:
            if new.get(path) is None or (walked is None and path not in before):
                return None
            if walked is not None:
                at = walked.insertion_after_folder_file(name)
            else:
                at = _insertion(data, width, tree_at, name, before[path])
            if at is None:
                return None
            cuts.append((at, at, path))
            continue
        if walked is not None:
            start = _looked_up(data, walked, name, entry)
        else:
            start = _find(data, width, tree_at, name, entry)
        if start is None:
            return None
        cuts.append((start, start + _size(len(name), width), path))
    cuts.sort(key=lambda c: (c[0], c[2].encode("utf-8", "surrogateescape")))
    if any(a[1] > b[0] for a, b in itertools.pairwise(cuts)):
        return None
    tree = _invalidated(root, list(old))
    removed = frozenset(p for p in old if new.get(p) is None)
    return Plan(data, width, cuts, removed, tree, tree_at)


def _version_2(data: bytes | bytearray) -> bool:
    return data[:4] == b"DIRC" and int.from_bytes(data[4:8], "big") == 2


def _fixed(width: int) -> int:
    return _FIXED - 20 + width


def _size(name_length: int, width: int) -> int:
    """An entry's bytes in a version 2 index: fixed part, name, 1 to 8 NULs up to a multiple of 8."""
    return (_fixed(width) + name_length + 8) & ~7


def _find(data: bytes | bytearray, width: int, end: int, name: bytes, entry: tuple[int, str]) -> int | None:
    """Where the stage-0 entry of `name` with `entry`'s mode and object id starts; None unless exactly
    one place holds it, with no other entry of that name after it."""
    key = entry_key(entry[1], name)
    at = data.find(key, _HEAD)
    if at < _HEAD + 40 or at + len(key) > end or data.find(key, at + 1) != -1:
        return None
    start = at - 40
    if int.from_bytes(data[start + 24 : start + 28], "big") != entry[0]:
        return None
    nxt = start + _size(len(name), width)
    if nxt < end and _name_at(data, width, nxt, end) == name:
        return None  # a conflict's stages: not a move this splice makes
    return start


def _looked_up(data: bytes | bytearray, walked: Entries, name: bytes, entry: tuple[int, str]) -> int | None:
    """`_find`'s answer from the walked entries: the one entry named `name`, when it holds `entry`'s
    object id and mode, in stage 0 without flags."""
    at = walked_at(data, walked, entry_key(entry[1], name), name)
    if at is None or int.from_bytes(data[at - 16 : at - 12], "big") != entry[0]:
        return None
    return at - 40


def _name_at(data: bytes | bytearray, width: int, at: int, end: int) -> bytes | None:
    fixed = _fixed(width)
    nul = data.find(b"\0", at + fixed, end)
    if at + fixed > end or nul < 0:
        return None
    return bytes(data[at + fixed : nul])


def _insertion(
    data: bytes | bytearray, width: int, end: int, name: bytes, before: tuple[str, str]
) -> int | None:
    """Where a new entry `name` goes: after its folder's previous file (`before`, found as `_find` finds
    an entry) and every entry the index holds between that one and it in git's order (bytes compared)."""
    previous = before[0].encode("utf-8", "surrogateescape")
    if not previous < name:
        return None
    key = entry_key(before[1], previous)
    found = data.find(key, _HEAD)
    if found < _HEAD + 40 or found + len(key) > end or data.find(key, found + 1) != -1:
        return None
    at = found - 40 + _size(len(previous), width)
    fixed = _fixed(width)
    for _ in range(_WALK_AT_MOST):
        if at == end:
            return at
        flags = int.from_bytes(data[at + fixed - 2 : at + fixed], "big")
        if flags & 0x4000:
            return None  # an extended entry: not in a version 2 index
        here = _name_at(data, width, at, end)
        if here is None or here == name:
            return None
        if here > name:
            return at
        at += _size(len(here), width)
        if at > end:
            return None
    return None


def _tree_extension(data: bytes | bytearray, width: int) -> tuple[int, _Tree] | None:
    """Where the `TREE` extension starts, and its root, when it is the index's only extension (it then
    ends where the checksum begins, and its nodes read to its last byte); None otherwise. It is looked
    for near the end first (a few KB at 50,000 entries), then from the first entry."""
    end = len(data) - width
    for first in (max(_HEAD, end - _TREE_WINDOW), _HEAD):
        at = data.find(b"TREE", first)
        while at != -1 and at + 8 <= end:
            size = int.from_bytes(data[at + 4 : at + 8], "big")
            root = _parse(bytes(data[at + 8 : end]), width) if at + 8 + size == end else None
            if root is not None:
                return None if _offsets_before(data, at) else (at, root)
            at = data.find(b"TREE", at + 1)
        if first == _HEAD:
            break
    return None


def _offsets_before(data: bytes | bytearray, tree_at: int) -> bool:
    """Does git's entry offset table (`IEOT`, written with `index.threads` before the cache tree when no
    end-of-entries marker is) end where the cache tree starts? Its bytes would be taken for entries. It
    holds 8 bytes a block of entries, each block at least one entry: it is looked for only that far back
    (~400 KB at 50,000 entries, not the whole 6 MB)."""
    reach = 8 + 4 + 8 * int.from_bytes(data[8:12], "big")  # its header, version, and a block per entry
    earliest = max(_HEAD, tree_at - reach)
    at = data.rfind(b"IEOT", earliest, tree_at)
    while at != -1:
        if at + 8 + int.from_bytes(data[at + 4 : at + 8], "big") == tree_at:
            return True
        at = data.rfind(b"IEOT", earliest, at)
    return False


def _parse(raw: bytes, width: int) -> _Tree | None:
    try:
        root, at = _node(raw, 0, width)
    except (ValueError, IndexError):
        return None
    return root if at == len(raw) and root.name == b"" else None


def _node(raw: bytes, at: int, width: int) -> tuple[_Tree, int]:
    """One node from `at` (its name, NUL, entry count, space, subtree count, newline, id when known) and
    its subtrees; where the next node starts."""
    nul = raw.index(b"\0", at)
    space = raw.index(b" ", nul)
    newline = raw.index(b"\n", space)
    count, subtrees = int(raw[nul + 1 : space]), int(raw[space + 1 : newline])
    if count < -1 or subtrees < 0:
        raise ValueError("not a cache tree")
    node = _Tree(raw[at:nul], count, b"")
    at = newline + 1
    if count >= 0:
        node.oid = raw[at : at + width]
        if len(node.oid) != width:
            raise ValueError("cut short")
        at += width
    for _ in range(subtrees):
        child, at = _node(raw, at, width)
        node.down.append(child)
    return node, at


def _invalidated(root: _Tree, paths: Sequence[str]) -> bytes:
    """The `TREE` extension's data (read into `root`) with every folder on the way to each of `paths` marked
    not known, and a folder of a path's own name dropped, as git's `cache_tree_invalidate_path` does."""
    for path in paths:
        node: _Tree | None = root
        parts = path.encode("utf-8", "surrogateescape").split(b"/")
        for depth, part in enumerate(parts):
            assert node is not None
            node.count, node.oid = -1, b""
            if depth == len(parts) - 1:
                node.down = [d for d in node.down if d.name != part]
                break
            node = next((d for d in node.down if d.name == part), None)
            if node is None:
                break
    out = bytearray()
    _write(root, out)
    return bytes(out)


def _write(node: _Tree, out: bytearray) -> None:
    out += node.name + b"\0" + str(node.count).encode() + b" " + str(len(node.down)).encode() + b"\n"
    if node.count >= 0:
        out += node.oid
    for child in node.down:
        _write(child, out)
