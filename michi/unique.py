"""Random identifiers from `os.urandom`, without the `uuid` module (which imports `platform`) or
`secrets` (which imports `hmac` and `hashlib`): their imports cost more than a command's own work (ADR 0010).
"""

from __future__ import annotations

import os


def uuid4_hex() -> str:
    """A random (version 4, RFC 4122 variant) UUID as 32 hex digits, as `uuid.uuid4().hex` gives it."""
    value = int.from_bytes(os.urandom(16), "big")
    value = (value & ~(0xF000 << 64)) | (0x4000 << 64)  # version 4
    value = (value & ~(0xC000 << 48)) | (0x8000 << 48)  # variant 10xx
    return f"{value:032x}"


def uuid4() -> str:
    """A random UUID in its canonical form (`str(uuid.uuid4())`): 8-4-4-4-12 lowercase hex digits."""
    h = uuid4_hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def token_hex(nbytes: int) -> str:
    """`nbytes` random bytes as hex, as `secrets.token_hex` gives them."""
    return os.urandom(nbytes).hex()
