"""The id git gives an object: SHA-1 of its header and content, with CPython's built-in SHA-1.

`hashlib` loads OpenSSL first (~5 ms per process) for a few small objects (ADR 0010)."""

from __future__ import annotations

try:
    from _sha1 import sha1  # type: ignore[import-not-found]
except ImportError:  # pragma: no cover - other interpreters
    from hashlib import sha1


KNOWN_BLOBS: dict[bytes, str] = {}  # content -> oid of blobs hashed ahead (`michi.git.pack.ahead`)


def object_id(kind: bytes, data: bytes) -> str:
    """The hex oid of a `kind` object (b"blob", b"tree", b"commit") holding `data`."""
    if KNOWN_BLOBS and kind == b"blob":
        known = KNOWN_BLOBS.get(data)
        if known is not None:
            return known
    digest: str = sha1(b"%s %d\0" % (kind, len(data)) + data).hexdigest()
    return digest
