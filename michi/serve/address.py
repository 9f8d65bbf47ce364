"""Where the server of this michi build listens, for this user (ADR 0016).

Imported by every `michi` process before anything else: the standard library's cheapest modules only.
"""

from __future__ import annotations

import os
import sys

import michi

# The build's description read as one number modulo a 64-bit prime names the build: no hashing module to
# load (binascii and its zlib cost every client ~0.5 ms). Not a defence against anyone: the folder is the
# user's alone (`trusted`).
_PRIME = 2**64 - 59


def folder() -> str:
    """The user's server folder: `MICHI_SERVER_DIR`, else `$XDG_RUNTIME_DIR/michi`, else `/tmp/michi-UID`."""
    chosen = os.environ.get("MICHI_SERVER_DIR")
    if chosen:
        return chosen
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    return os.path.join(runtime, "michi") if runtime else f"/tmp/michi-{os.getuid()}"


def build_key() -> str:
    """Names one build of michi: the interpreter, where michi and its imports come from, its version.
    A server only ever serves clients that would have run the very same code."""
    parts = [sys.executable, sys.version, os.path.dirname(michi.__file__), michi.__version__, *sys.path[1:]]
    data = "\0".join(parts).encode("utf-8", "surrogateescape")
    return f"{int.from_bytes(data, 'big') % _PRIME:016x}"


class Address:
    """The socket, the lock file that says a server lives, and the server's own description of itself."""

    def __init__(self, where: str | None = None, key: str | None = None) -> None:
        self.folder = where or folder()
        stem = os.path.join(self.folder, f"s-{key or build_key()}")
        self.socket = stem + ".sock"
        self.lock = stem + ".lock"
        self.info = stem + ".json"
        self.log = stem + ".log"

    def trusted(self) -> bool:
        """The folder is this user's alone: nobody else could have put a socket there."""
        try:
            st = os.stat(self.folder)
        except OSError:
            return False
        return st.st_uid == os.getuid() and not st.st_mode & 0o077
