"""A spare worker's own copy of the server's memory, made before it waits rather than while it serves.

A forked worker shares the server's pages until it writes to one; every write to a shared page first
faults and copies it (copy-on-write). Python writes to every object it touches (its reference count), so
a served command took ~1,400 such faults, several ms of system time on its critical path (more in a
virtual machine). A spare has nothing to do before its first client: it asks the kernel to copy every
private writable page now (`madvise(MADV_POPULATE_WRITE)`, Linux 5.14), which changes no byte, only who
owns the page. The price is memory: each spare owns its copy of the server's ~20 MB (ADR 0016).
Elsewhere, or on an older kernel, nothing happens and pages are copied on demand as before.
"""

from __future__ import annotations

import contextlib
import sys

MADV_POPULATE_WRITE = 23  # linux/mman.h
LARGEST = 256 << 20  # a mapping this large is a reservation (never all touched), not the server's state


def writable_private() -> list[tuple[int, int]]:
    """(start, length) of this process's private writable mappings, as /proc/self/maps lists them."""
    regions = []
    with open("/proc/self/maps", "rb") as maps:
        for line in maps.read().splitlines():
            fields = line.split()
            if len(fields) < 2 or fields[1] != b"rw-p":
                continue
            start, end = (int(n, 16) for n in fields[0].split(b"-"))
            if end - start <= LARGEST:
                regions.append((start, end - start))
    return regions


def populate(regions: list[tuple[int, int]]) -> int:
    """Copy every page of `regions` into this process now; the bytes copied (0: not supported here)."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    madvise = libc.madvise
    madvise.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)
    done = 0
    for start, length in regions:
        if madvise(start, length, MADV_POPULATE_WRITE) == 0:
            done += length
    return done


def now() -> None:
    """Populate this process's private writable memory (Linux; elsewhere a no-op)."""
    if not sys.platform.startswith("linux"):
        return
    with contextlib.suppress(OSError, AttributeError):
        populate(writable_private())
