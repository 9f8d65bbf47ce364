"""A stamp of the code that wrote a cache, for the caches' format keys (ADR 0008).

A cache keyed on michi's `__version__` alone served rows of the old shape after a development change of
the code that makes them (same version, new format). The stamp is each module's source file size and
modification time, as Python's own `.pyc` check uses: an edit, a checkout or an install changes it, and
computing it is one `stat` per module (microseconds), no reading or hashing on the warm path. A module
without a source file to stat (a zip, a frozen build) stamps as its name alone: the version still counts.
"""

from __future__ import annotations

import os
from types import ModuleType


def stamp(*modules: ModuleType) -> str:
    parts = []
    for module in modules:
        try:
            info = os.stat(module.__file__ or "")
            parts.append(f"{info.st_size:x}.{info.st_mtime_ns:x}")
        except (OSError, TypeError):
            parts.append(module.__name__)
    return "/".join(parts)
