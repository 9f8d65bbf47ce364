"""Waiters' queue (seed 003 fairness): one ticket file per waiter, oldest first, crash-safe.

A waiter holds an exclusive flock on its own ticket for as long as it waits; the kernel drops it when the
waiter dies, so a ticket nobody holds is a dead waiter's and is removed by whoever notices. Each waiter
blocks on the flock of the ticket just ahead of it, so it wakes the moment that waiter leaves or dies.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import stat
import time
from pathlib import Path

from michi.lock.fs import OPEN_FLAGS, ensure_dir
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
        ensure_dir(self.folder)
        # CLOCK_MONOTONIC is one clock for every process on the machine, and NTP never steps it back.
        name = f"{time.monotonic_ns():020d}.{pid}.{token_hex(3)}{SUFFIX}"
        tmp = self.folder / f".{name}.tmp"
        fd = os.open(tmp, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644)
        fcntl.flock(fd, fcntl.LOCK_EX)
        # Published only once locked: an unlocked ticket in the queue always means a dead waiter.
        os.rename(tmp, self.folder / name)
        return Ticket(name, fd)

    def leave(self, ticket: Ticket) -> None:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.folder / ticket.name)
        os.close(ticket.fd)  # drops the flock: wakes the waiter behind us

    def _names(self) -> list[str]:
        """The tickets' names, oldest first; a name `join` would not make is nobody's ticket, ignored."""
        try:
            return sorted(n for n in os.listdir(self.folder) if _NAME.fullmatch(n))
        except FileNotFoundError:
            return []

    def _alive(self, name: str) -> bool:
        path = self.folder / name
        try:
            fd = os.open(path, os.O_RDONLY | OPEN_FLAGS)
        except FileNotFoundError:
            return False
        except OSError:  # a symlink, something unreadable: no waiter's ticket (a waiter makes a file)
            _sweep(path)
            return False
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                _sweep(path)
                return False
            try:
                fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
            except BlockingIOError:
                return True
            _sweep(path)
            return False
        finally:
            os.close(fd)

    def ahead_of(self, ticket: Ticket | None) -> str | None:
        """The live ticket just ahead of ours (any live ticket when we have none); dead ones are swept."""
        names = self._names()
        if ticket is not None:
            names = [n for n in names if n < ticket.name]
        for name in reversed(names) if ticket is not None else names:
            if self._alive(name):
                return name
        return None

    def waiters(self) -> list[int]:
        """PIDs of live waiters, oldest first."""
        return [int(n.split(".")[1]) for n in self._names() if self._alive(n)]

    def has_waiters(self, ticket: Ticket | None = None) -> bool:
        return any(n != (ticket.name if ticket else None) and self._alive(n) for n in self._names())

    def path(self, name: str) -> Path:
        return self.folder / name


def _sweep(path: Path) -> None:
    """Remove a dead waiter's ticket, or whatever else took a ticket's name (a folder stays: ignored)."""
    with contextlib.suppress(OSError):
        os.unlink(path)
