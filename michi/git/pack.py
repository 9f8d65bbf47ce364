"""Many objects written as one pack file, in Python (ADR 0015).

An import chunk writes 10,000 blobs. As loose objects that is 10,000 files created, compressed and renamed
inside the lock, and then `git push` opens and inflates each again to pack them. One pack (no deltas) and
its version-2 index are what `git index-pack` would write for the same objects; git finds a pack that
appears while a `cat-file` runs (it rescans the pack folder on a miss).
"""

from __future__ import annotations

import hashlib
import os
import zlib
from collections.abc import Iterable, Mapping

from michi.git.repo import Repo
from michi.objectid import KNOWN_BLOBS

_TYPES = {b"commit": 1, b"tree": 2, b"blob": 3}
_SMALL_OFFSET = 0x80000000


def _entry_header(kind: int, size: int) -> bytes:
    out = bytearray()
    byte = (kind << 4) | (size & 0x0F)
    size >>= 4
    while size:
        out.append(byte | 0x80)
        byte, size = size & 0x7F, size >> 7
    out.append(byte)
    return bytes(out)


_DEFLATED: dict[bytes, bytes] = {}  # content -> its pack entry's zlib stream, of blobs made `ahead`


def ahead(blobs: Iterable[bytes]) -> None:
    """Hash and compress `blobs` now, by whoever has the time: an import's thread does the next chunk's
    while git lands this one (ADR 0015), and its commit's pack then takes them as they are. Keyed by
    content, so a blob that is not made after all (a guessed id was wrong) only costs the guess; the
    ones made earlier are forgotten (one chunk's are kept)."""
    forget_ahead()
    for data in blobs:
        KNOWN_BLOBS[data] = hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()
        _DEFLATED[data] = zlib.compress(data, 1)


def forget_ahead() -> None:
    KNOWN_BLOBS.clear()
    _DEFLATED.clear()


def write_pack(repo: Repo, objects: Iterable[tuple[bytes, bytes]]) -> list[str]:
    """Store (kind, content) objects in one new pack; their oids in the order given."""
    oids: list[str] = []
    unique: dict[bytes, tuple[bytes, bytes]] = {}
    for kind, data in objects:
        raw_id = hashlib.sha1(b"%s %d\0" % (kind, len(data)) + data).digest()
        oids.append(raw_id.hex())
        unique.setdefault(raw_id, (kind, data))
    write_known(repo, unique)
    return oids


def write_known(repo: Repo, objects: Mapping[bytes, tuple[bytes, bytes]]) -> None:
    """Store objects whose binary oids are known (a batch hashed them when it took them) in one new pack.
    The count is known first, so the pack is hashed as it is written, never read back."""
    if not objects:
        return
    folder = repo.objects_dir / "pack"
    folder.mkdir(parents=True, exist_ok=True)
    index: dict[bytes, tuple[int, int]] = {}  # binary oid -> (crc32, offset)
    tmp = folder / f"tmp_pack_michi_{os.getpid()}"
    digest = hashlib.sha1()
    headers: dict[tuple[int, int], bytes] = {}
    crc32, compress, deflated = zlib.crc32, zlib.compress, _DEFLATED.get
    with open(tmp, "wb") as out:
        head = b"PACK\0\0\0\2" + len(objects).to_bytes(4, "big")
        parts, offset = [head], len(head)
        for raw_id, (kind, data) in objects.items():
            key = (_TYPES[kind], len(data))
            header = headers.get(key)
            if header is None:
                header = headers[key] = _entry_header(*key)
            body = deflated(data) if kind == b"blob" else None
            entry = header + (compress(data, 1) if body is None else body)
            index[raw_id] = (crc32(entry), offset)
            parts.append(entry)
            offset += len(entry)
            if len(parts) >= 1024:
                block = b"".join(parts)
                digest.update(block)
                out.write(block)
                parts = []
        block = b"".join(parts)
        digest.update(block)
        checksum = digest.digest()
        out.write(block + checksum)
    name = folder / f"pack-{checksum.hex()}"
    idx_tmp = folder / f"tmp_idx_michi_{os.getpid()}"
    idx_tmp.write_bytes(_index(index, checksum))
    os.chmod(tmp, 0o444)
    os.chmod(idx_tmp, 0o444)
    os.replace(tmp, name.with_suffix(".pack"))
    os.replace(idx_tmp, name.with_suffix(".idx"))  # last: git takes a pack as present once its index is


def _index(index: dict[bytes, tuple[int, int]], checksum: bytes) -> bytes:
    names = sorted(index)
    fanout = [0] * 256
    for raw in names:
        fanout[raw[0]] += 1
    total, counts = 0, []
    for count in fanout:
        total += count
        counts.append(total.to_bytes(4, "big"))
    small: list[bytes] = []
    large: list[bytes] = []
    for raw in names:
        offset = index[raw][1]
        if offset < _SMALL_OFFSET:
            small.append(offset.to_bytes(4, "big"))
        else:  # past 2 GiB: an entry in the table of 8-byte offsets
            small.append((_SMALL_OFFSET | len(large)).to_bytes(4, "big"))
            large.append(offset.to_bytes(8, "big"))
    body = b"".join(
        [
            b"\377tOc\0\0\0\2",
            *counts,
            *names,
            *(index[raw][0].to_bytes(4, "big") for raw in names),
            *small,
            *large,
            checksum,
        ]
    )
    return body + hashlib.sha1(body).digest()
