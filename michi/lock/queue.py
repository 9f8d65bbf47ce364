"""Waiters' queue (seed 003 fairness): one ticket file per waiter, oldest first, crash-safe.

A waiter holds an exclusive flock on its own ticket for as long as it waits; the kernel drops it when the
waiter dies, so a ticket nobody holds is a dead waiter's and is removed by whoever notices. Each waiter
blocks on the flock of the ticket just ahead of it, so it wakes the moment that waiter leaves or dies.

A stopped waiter (SIGSTOP, Ctrl-Z, a debugger) keeps its flock, and so its place, but is passed over
while it is stopped: it held the free lock back from every later waiter and newcomer (ADR 0003).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import stat
import time
from pathlib import Path

from michi.lock import procs
from michi.lock.fs import OPEN_FLAGS, open_folder
from michi.plain import Plain
from michi.unique import token_hex

SUFFIX = ".ticket"
_NAME = re.compile(r"[0-9]{20}\.[0-9]{1,10}\.[0-9a-f]{6}" + re.escape(SUFFIX))


class Ticket(Plain):
    __slots__ = ("fd", "name")

    def __init__(self, name: str, fd: int) -> None:
        self.name, self.fd = name, fd


class Queue:
    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def join(self, pid: int) -> Ticket:
        folder = open_folder(self.folder, create=True)
        assert folder is not None
        try:
            # CLOCK_MONOTONIC is one clock for every process on the machine, and NTP never steps it back.
            name = f"{time.monotonic_ns():020d}.{pid}.{token_hex(3)}{SUFFIX}"
            tmp = f".{name}.tmp"
            # Relative to the folder's descriptor: never through a link put in the folder's place.
            flags = os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC | os.O_NOFOLLOW
            fd = os.open(tmp, flags, 0o644, dir_fd=folder)
            fcntl.flock(fd, fcntl.LOCK_EX)
            # Published only once locked: an unlocked ticket in the queue always means a dead waiter.
            os.rename(tmp, name, src_dir_fd=folder, dst_dir_fd=folder)
        finally:
            os.close(folder)
        return Ticket(name, fd)

    def leave(self, ticket: Ticket) -> None:
        with contextlib.suppress(OSError):
            os.unlink(self.folder / ticket.name)
        os.close(ticket.fd)  # drops the flock: wakes the waiter behind us

    def _live(
        self, names_before: str | None = None, *, first: bool = False, running: bool = False
    ) -> list[str]:
        """Live tickets' names, oldest first (only those before `names_before`, nearest first; with `first`,
        one at most; with `running`, none of a stopped waiter); dead ones are swept. A name `join` would
        not make is nobody's ticket."""
        folder = open_folder(self.folder, create=False)
        if folder is None:
            return []
        try:
            names = sorted(n for n in os.listdir(folder) if _NAME.fullmatch(n))
            if names_before is not None:
                names = [n for n in names if n < names_before]
                names.reverse()  # the nearest ahead first
            live = []
            for name in names:
                # Stopped or not is asked only of a live ticket: one read of /proc/PID/stat per waiter seen.
                if _alive(folder, name) and not (running and procs.is_stopped(pid_of(name))):
                    live.append(name)
                    if first:
                        break
            return live
        finally:
            os.close(folder)

    def ahead_of(self, ticket: Ticket | None) -> str | None:
        """The running waiter's ticket just ahead of ours (the first in line when we have none): a stopped
        waiter is passed over, its place kept for when it resumes. Dead tickets are swept."""
        live = self._live(ticket.name if ticket is not None else None, first=True, running=True)
        return live[0] if live else None

    def waiters(self) -> list[int]:
        """PIDs of live waiters, oldest first, stopped ones included (they keep their place)."""
        return [pid_of(n) for n in self._live()]

    def has_waiters(self, ticket: Ticket | None = None) -> bool:
        """Whether a running waiter other than `ticket`'s is queued (a stopped one neither goes first
        nor asks the holder for the lock)."""
        mine = ticket.name if ticket else None
        return any(n != mine for n in self._live(first=mine is None, running=True))

    def path(self, name: str) -> Path:
        return self.folder / name


def pid_of(name: str) -> int:
    """The PID a ticket is named by: its waiter's, the process that holds its flock."""
    return int(name.split(".")[1])


def _alive(folder: int, name: str) -> bool:
    try:
        fd = os.open(name, os.O_RDONLY | OPEN_FLAGS, dir_fd=folder)
    except FileNotFoundError:
        return False
    except OSError:  # a symlink, something unreadable: no waiter's ticket (a waiter makes a file)
        _sweep(folder, name)
        return False
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            _sweep(folder, name)
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        _sweep(folder, name)
        return False
    finally:
        os.close(fd)


def _sweep(folder: int, name: str) -> None:
    """Remove a dead waiter's ticket, or whatever else took a ticket's name (a folder stays: ignored)."""
    with contextlib.suppress(OSError):
        os.unlink(name, dir_fd=folder)
