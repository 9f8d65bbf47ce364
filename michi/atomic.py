"""Write a file atomically: a temp file in the same folder, then `os.replace` (house style 7).

Readers see the old content or the new, never half a file, even if the writer is SIGKILLed. Used by the
lock's owner record, the journal, the task caches and the installed hook.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path


def write_atomic(path: Path, data: bytes, *, mode: int = 0o644) -> None:
    import tempfile  # lazily: the pre-commit hook imports modules that use this, but never writes

    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
