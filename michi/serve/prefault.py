"""A spare worker's own copy of the server's memory, made while it waits rather than while it serves.

A forked worker shares the server's pages until it writes to one; every write to a shared page first
faults and copies it (copy-on-write). Python writes to every object it touches (its reference count), so
a served command took ~1,400 such faults, several ms of system time on its critical path (more in a
virtual machine). A spare waits for a client anyway: a thread of its own, at the lowest priority
(SCHED_IDLE: only a core with nothing else to do runs it), asks the kernel to copy every private
writable page now (`madvise(MADV_POPULATE_WRITE)`, Linux 5.14). It changes no byte, only who owns the
page, so it may run on while the command starts. The price is memory: each spare owns its copy of the
server's ~20 MB (ADR 0016). Elsewhere, or on an older kernel, nothing happens and pages are copied on
demand as before.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading

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
        if madvise(start, length, MADV_POPULATE_WRITE) == 0:  # ctypes lets the GIL go meanwhile
            done += length
    return done


def start() -> None:
    """Populate this process's memory in a thread at idle priority (Linux; elsewhere a no-op). The
    regions are read before the thread exists, so its own stack is not among them."""
    if not sys.platform.startswith("linux"):
        return
    try:
        regions = writable_private()
    except OSError:
        return
    threading.Thread(target=_idle_populate, args=(regions,), daemon=True).start()


def _idle_populate(regions: list[tuple[int, int]]) -> None:
    with contextlib.suppress(OSError, AttributeError):
        os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))  # this thread only
    with contextlib.suppress(OSError, AttributeError):
        populate(regions)
