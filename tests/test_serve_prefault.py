"""A spare worker copies the server's pages while it waits (michi.serve.prefault, ADR 0016)."""

from __future__ import annotations

import os
import sys

import pytest

from michi.serve import prefault

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux's madvise")


def _private_kb() -> int:
    """This process's own (not shared with its parent) resident memory, in kB."""
    with open("/proc/self/smaps_rollup") as rollup:
        fields = dict(line.split(":", 1) for line in rollup.read().splitlines()[1:])
    return sum(int(fields[name].split()[0]) for name in ("Private_Clean", "Private_Dirty"))


def _kernel() -> tuple[int, ...]:
    return tuple(int(n) for n in os.uname().release.split("-")[0].split(".")[:2])


def test_populating_makes_the_shared_pages_the_forks_own() -> None:
    shared = bytearray(os.urandom(1024)) * 16 * 1024  # 16 MB written by the parent, shared after the fork
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the fork: as a spare, its pages are the parent's until it writes to them
        code = 1
        try:
            before = _private_kb()
            copied = prefault.populate(prefault.writable_private())
            after = _private_kb()
            os.write(write, f"{before} {after} {copied} {shared[-1]}".encode())
            code = 0
        finally:
            os._exit(code)
    os.close(write)
    report = os.read(read, 200).decode().split()
    os.close(read)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    before, after, copied, last = (int(n) for n in report)
    if copied == 0 and _kernel() < (5, 14):
        pytest.skip("this kernel has no MADV_POPULATE_WRITE (Linux 5.14)")
    assert after - before >= 16 * 1024  # the 16 MB (and more) are the fork's own now
    assert last == shared[-1]  # and hold what they held: nothing was written


def test_the_regions_leave_out_what_is_not_writable_and_private() -> None:
    regions = prefault.writable_private()
    assert regions
    with open("/proc/self/maps") as maps:
        listed = {int(line.split("-", 1)[0], 16): line.split()[1] for line in maps}
    assert all(listed[start] == "rw-p" for start, _ in regions)
    assert all(length <= prefault.LARGEST for _, length in regions)
