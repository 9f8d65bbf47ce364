"""git's index file, read just enough to give a few entries their files' new stat data (ADR 0015).

A staged checkout move (`michi.git.staged`) has git write the new index beside the push, naming files it
wrote in a staging folder; renaming those files into the work tree changes their ctime and nothing else.
Here those entries get the ctime (and, where git left it blank, the size) of the files as they now are, and
the file its checksum again. Only versions 2 and 3 are read (version 4 compresses paths: no entry can be
found without reading all before it); an entry is taken only when exactly one place in the file holds its
object id, flags and path and its stat data is the staged file's. Anything else: None, and the caller has
git do the move as before.
"""

from __future__ import annotations

import os
import stat
import struct
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import mmap

    from michi.git.indexwalk import Entries

    Buffer = bytes | bytearray | mmap.mmap  # an index file's bytes: read, or mapped (`staged._splice`)

_STAT = struct.Struct(">10I")  # ctime s, ns; mtime s, ns; dev; ino; mode; uid; gid; size (git truncates each)
_U32 = 0xFFFFFFFF
_FILE_MODES = (0o100644, 0o100755)


@dataclass(frozen=True)
class Moved:
    """One entry to refresh: its path and object id, and its file's stat data where git wrote it."""

    path: str
    oid: str
    staged: os.stat_result


def entry_key(oid: str, name: bytes) -> bytes:
    """The bytes of a stage-0 entry without flags from its object id on (id, flags holding the name's
    length, name, NUL): found in exactly one place, it is that entry (its stat data are the 40 before)."""
    return bytes.fromhex(oid) + min(len(name), 0xFFF).to_bytes(2, "big") + name + b"\0"


def locate(data: Buffer, moved: list[Moved]) -> list[int] | None:
    """Where each of `moved`'s entries starts in `data` (a whole index file), None when one cannot be found
    or is not what git wrote for its staged file (`Moved.staged`)."""
    if len(data) < 12 or data[:4] != b"DIRC" or int.from_bytes(data[4:8], "big") not in (2, 3):
        return None
    found: list[int] = []
    for item in moved:
        name = item.path.encode("utf-8", "surrogateescape")
        at = _found(data, entry_key(item.oid, name))
        if at is None:
            return None
        found.append(at - _STAT.size)
    return found if verify(data, moved, found) else None


def verify(data: Buffer, moved: list[Moved], where: list[int]) -> bool:
    """Is the entry at each of `where` in `data` (a whole index file) the one git wrote for its staged file
    (`Moved.staged`): its object id and name, a file's mode and the file's stat data?"""
    if len(data) < 12 or data[:4] != b"DIRC" or int.from_bytes(data[4:8], "big") not in (2, 3):
        return False
    for item, start in zip(moved, where, strict=True):
        name = item.path.encode("utf-8", "surrogateescape")
        key = entry_key(item.oid, name)
        if start < 12 or data[start + _STAT.size : start + _STAT.size + len(key)] != key:
            return False
        ctime_s, ctime_ns, mtime_s, mtime_ns, dev, ino, mode, uid, gid, size = _STAT.unpack_from(data, start)
        st = item.staged
        nsec = mtime_ns != 0 or ctime_ns != 0  # a git built without nanosecond times writes 0
        if (
            mode not in _FILE_MODES
            or not stat.S_ISREG(st.st_mode)
            or (mtime_s, mtime_ns) != _times(st.st_mtime_ns, nsec)
            or (ctime_s, ctime_ns) != _times(st.st_ctime_ns, nsec)
            or (dev, ino, uid, gid) != tuple(v & _U32 for v in (st.st_dev, st.st_ino, st.st_uid, st.st_gid))
            or size not in (0, st.st_size & _U32)
        ):
            return False
    return True


class Prefix:
    """The checksum of an index file's bytes before its first moved entry, made while nothing waits for it
    (the push runs): after the move only the bytes from that entry on are hashed, half the file on average
    (entries are sorted by path and a task's path is random)."""

    def __init__(self, data: Buffer, where: list[int], width: int) -> None:
        self.end = min(where, default=0)
        self.width = width
        self.hash = _hasher(width, len(data))(memoryview(data)[: self.end])

    def digest(self, data: Buffer) -> bytes:
        whole = self.hash.copy()
        whole.update(memoryview(data)[self.end : len(data) - self.width])
        return bytes(whole.digest())


def retime(
    data: bytearray | mmap.mmap,
    moved: list[Moved],
    where: list[int],
    now: list[os.stat_result],
    settled_before_ns: int,
    width: int,
    prefix: Prefix | None = None,
) -> list[tuple[int, bytes]] | None:
    """Give the entries `locate` found at `where` in `data` their files' stat data as they now are (`now`:
    moved by a rename, so the same files, only their ctime new), and make the trailing checksum again,
    in place; the (offset, bytes) written, for the file to be written the same way. None, with `data`
    unchanged, when a file is not the one staged. A size git blanked (a file as new as the index it read:
    "racily clean") is filled in only for a file last modified before `settled_before_ns`, which the index
    written now is surely newer than; otherwise it stays blank and git compares the content, as it would.
    `width`: the checksum's bytes (20 for SHA-1, 32 for SHA-256); `prefix`: the checksum of the bytes before
    the first of `where`, made ahead (`Prefix`)."""
    for item, after in zip(moved, now, strict=True):
        st = item.staged
        same = (after.st_ino, after.st_dev, after.st_size, after.st_mtime_ns)
        if same != (st.st_ino, st.st_dev, st.st_size, st.st_mtime_ns) or not stat.S_ISREG(after.st_mode):
            return None
    written: list[tuple[int, bytes]] = []
    for start, after in zip(where, now, strict=True):
        fields = list(_STAT.unpack_from(data, start))
        nsec = fields[1] != 0 or fields[3] != 0
        fields[0], fields[1] = _times(after.st_ctime_ns, nsec)
        if fields[9] == 0 and after.st_mtime_ns < settled_before_ns:
            fields[9] = after.st_size & _U32
        _STAT.pack_into(data, start, *fields)
        written.append((start, bytes(data[start : start + _STAT.size])))
    if written and any(data[-width:]):  # git 2.40's index.skipHash leaves it zero, and so does this
        if prefix is not None and prefix.width == width and prefix.end <= min(where):
            data[-width:] = prefix.digest(data)
        else:
            data[-width:] = _digest(width, memoryview(data)[:-width])
        written.append((len(data) - width, bytes(data[-width:])))
    return written


def unchanged(
    data: bytes | bytearray,
    index_mtime_ns: int,
    entries: Mapping[str, tuple[int, str] | None],
    files: Mapping[str, os.stat_result | None],
    content: Callable[[str, os.stat_result], bytes | None],
    walked: Entries | None = None,
) -> bool:
    """Does the index file `data` (last modified at `index_mtime_ns`) hold exactly `entries` (path ->
    (mode, object id) in stage 0 without flags; None: no entry at all; and none inside it, as in a folder
    that becomes a file), and does each of their work tree files (`files`: None when absent) match its
    entry's stat data, field for field, and, when it is racily clean (last modified in the index's second
    or later: by the second, as git built without USE_NSEC, most builds, judges it), hold its blob's
    bytes (`content`: the file's bytes, None when not read)? What `diff-index <commit> -- <paths>` would
    find clean and `ls-files -v` would show untagged; False whenever that cannot be told this way (git
    decides). `walked`: the file's entries, when walked (`michi.git.indexwalk`): looked up, not searched."""
    if len(data) < 12 or data[:4] != b"DIRC" or int.from_bytes(data[4:8], "big") not in (2, 3):
        return False
    for path, entry in entries.items():
        name = path.encode("utf-8", "surrogateescape")
        if entry is None:
            # Every entry's name ends in a NUL: none ends here. Nor is one inside it (git's pathspec `path`
            # names those too): a folder that becomes a file. (A file's path has none inside: git keeps
            # no folder and file of one name.)
            if walked is not None:
                if walked.named(name) or walked.inside(name):
                    return False
            elif _named_or_inside(data, name):
                return False
            continue
        key = entry_key(entry[1], name)
        at = _found(data, key) if walked is None else walked_at(data, walked, key, name)
        if at is None:
            return False
        fields = _STAT.unpack_from(data, at - _STAT.size)
        st = files.get(path)
        if st is None or fields[6] != entry[0] or not _matches(fields, st):
            return False
        # Racily clean (last modified in the index's second or later): equal stat data prove nothing, as
        # an edit in the tick git took them in leaves them equal. git reads such a file; so does this.
        racy = st.st_mtime_ns // 1_000_000_000 >= index_mtime_ns // 1_000_000_000
        if racy and not _holds(content(path, st), bytes.fromhex(entry[1])):
            return False
    return True


def _named_or_inside(data: bytes | bytearray, name: bytes) -> bool:
    """Does `data` hold `name` followed by a NUL or a slash (an entry of that name, or one inside it)? One
    search through the file, not one for each."""
    at = data.find(name)
    while at != -1:
        if data[at + len(name) : at + len(name) + 1] in (b"\0", b"/"):
            return True
        at = data.find(name, at + 1)
    return False


def _found(data: Buffer, key: bytes) -> int | None:
    """Where `key` (`entry_key`) is, when exactly one place in `data` holds it (then it is that entry)."""
    at = data.find(key, 12)
    if at < 12 + _STAT.size or data.find(key, at + 1) != -1:
        return None
    return at


def walked_at(data: bytes | bytearray, walked: Entries, key: bytes, name: bytes) -> int | None:
    """Where `key` (`entry_key`) is, in the one entry named `name` the walk found, if it holds it there."""
    start = walked.only(name)
    if start is None or data[start + _STAT.size : start + _STAT.size + len(key)] != key:
        return None
    return start + _STAT.size


def _holds(found: bytes | None, oid: bytes) -> bool:
    """Are `found` (a file's bytes; None: not read) the blob `oid` names, byte for byte?"""
    if found is None:
        return False
    blob = _hasher(len(oid), len(found))(b"blob %d\0" % len(found))
    blob.update(found)
    return bytes(blob.digest()) == oid


def _matches(fields: tuple[int, ...], st: os.stat_result) -> bool:
    ctime_s, ctime_ns, mtime_s, mtime_ns, dev, ino, mode, uid, gid, size = fields
    nsec = mtime_ns != 0 or ctime_ns != 0
    executable = 0o100755 if st.st_mode & 0o100 else 0o100644
    return (
        stat.S_ISREG(st.st_mode)
        and mode == executable
        and (mtime_s, mtime_ns) == _times(st.st_mtime_ns, nsec)
        and (ctime_s, ctime_ns) == _times(st.st_ctime_ns, nsec)
        and (dev, ino, uid, gid) == tuple(v & _U32 for v in (st.st_dev, st.st_ino, st.st_uid, st.st_gid))
        and size == st.st_size & _U32
        and size != 0  # git's mark of an entry it must read (smudged racily clean), unless its blob is empty
    )


def _times(ns: int, nsec: bool) -> tuple[int, int]:
    return (ns // 1_000_000_000) & _U32, ns % 1_000_000_000 if nsec else 0


# Below this, CPython's own SHA-1 (no OpenSSL to load: ~5 ms a process, ADR 0010) is as quick; above it
# OpenSSL's is ~5x quicker (10 ms against 53 for a 6 MB index).
_OPENSSL_FROM = 1 << 20


def _digest(width: int, data: memoryview) -> bytes:
    return bytes(_hasher(width, len(data))(data).digest())


def _hasher(width: int, size: int) -> Any:
    """The hash git's index of `width`-byte checksums uses, as the quickest constructor for `size` bytes."""
    if size >= _OPENSSL_FROM:
        try:  # hashlib's own OpenSSL constructors, without the ~1 ms hashlib spends setting up the others
            from _hashlib import openssl_sha1, openssl_sha256

            made = openssl_sha1 if width == 20 else openssl_sha256
            made(b"")  # an OpenSSL that refuses it (FIPS mode) raises: hashlib then decides, as before
            return made
        except (ImportError, ValueError):  # pragma: no cover - no OpenSSL, or one that refuses SHA-1
            import hashlib

            return hashlib.sha1 if width == 20 else hashlib.sha256
    try:  # only the one this repository uses: a module imported is start-up paid (ADR 0010)
        if width == 20:
            from _sha1 import sha1  # type: ignore[import-not-found]

            return sha1
        from _sha256 import sha256  # type: ignore[import-not-found]

        return sha256
    except ImportError:  # pragma: no cover - other interpreters
        import hashlib

        return hashlib.sha1 if width == 20 else hashlib.sha256
