"""Kernel wake-ups for waiters, and the backoff used when there is nothing to wake us.

A holder keeps an exclusive flock on the baton file; a waiter blocks on a shared flock of it in a helper
thread, so the kernel wakes it the moment the holder releases, or dies (even by SIGKILL). Polling alone
cannot hand over fast after a long hold: its step has grown by then (ADR 0003 aims at a < 2 ms handoff).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import random
import threading
import time
from pathlib import Path

from michi import threads
from michi.lock.fs import OPEN_FLAGS

FIRST_STEP = 0.001
POLL_CAP = 0.05  # polling a holder we cannot block on (e.g. `michi lock acquire` from a script)
WATCH_CAP = 1.0  # re-judge staleness this often even while blocked on a holder's flock


_FLAGS = os.O_RDONLY | OPEN_FLAGS


def is_flocked(path: Path) -> bool:
    """Whether someone holds an exclusive flock on `path` (a missing file is not held)."""
    try:
        fd = os.open(path, _FLAGS)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        return False
    except BlockingIOError:
        return True
    finally:
        os.close(fd)


class Waker:
    """Sets `event` when the flock on a watched file is free. One blocked thread per file at most; a
    thread outliving its wait (deadline passed) ends as soon as the flock is dropped."""

    def __init__(self) -> None:
        self.event = threading.Event()
        self._threads: dict[Path, threading.Thread] = {}

    def watch(self, path: Path) -> None:
        running = self._threads.get(path)
        if running is not None and running.is_alive():
            return
        thread = threading.Thread(target=self._block, args=(path,), daemon=True, name="michi-lock-wake")
        self._threads[path] = thread
        threads.start(thread)

    def _block(self, path: Path) -> None:
        with contextlib.suppress(OSError):
            fd = os.open(path, _FLAGS)
            try:
                fcntl.flock(fd, fcntl.LOCK_SH)
            finally:
                os.close(fd)  # also drops the shared flock at once: never delay the next holder
        self.event.set()


class Backoff:
    """Jittered exponential steps from about 1 ms; jitter keeps a crowd of waiters from polling in step."""

    def __init__(self, cap: float = POLL_CAP) -> None:
        self.step = FIRST_STEP
        self.cap = cap

    def next(self) -> float:
        delay = self.step * random.uniform(0.5, 1.0)
        self.step = min(self.cap, self.step * 2)
        return delay


def wait_flock(fd: int, timeout: float) -> float | None:
    """Take an exclusive flock on `fd`, polling with backoff for up to `timeout` seconds: None once
    taken, else how long we waited."""
    start, backoff = time.monotonic(), Backoff(POLL_CAP)
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return None
        except BlockingIOError:
            waited = time.monotonic() - start
            if waited >= timeout:
                return waited
            time.sleep(min(backoff.next(), max(0.0, timeout - waited)))
