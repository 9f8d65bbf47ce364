"""The rest of a release that found the lock's guard held by a stopped process (ADR 0003).

The holder does not wait for that process: it leaves the lock in place and goes on. A command that ends
right after leaves a stale lock (its PID gone), taken over by whoever takes the guard next. A long-lived
holder (`michi mcp`, a served worker) stays alive, so its lock would count as held until its lease ran
out, minutes later. A thread here waits for the guard instead and removes the lock, if it is still this
holder's, as soon as the stopped process is resumed or ended.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import threading
from pathlib import Path

from michi import threads
from michi.errors import MichiError
from michi.lock import events, fs
from michi.lock.record import token_of


def release_when_free(
    lock_dir: Path, guard: Path, token: str, state_dir: Path, command: str
) -> threading.Thread:
    """Start the wait; a daemon thread, so a process that ends meanwhile is not held up by it."""
    thread = threading.Thread(
        target=_release,
        args=(lock_dir, guard, token, state_dir, command),
        name="michi-late-release",
        daemon=True,
    )
    threads.start(thread)
    return thread


def _release(lock_dir: Path, guard: Path, token: str, state_dir: Path, command: str) -> None:
    try:
        fd = fs.open_flock_file(guard)  # its own open file: a flock is shared by every user of one
    except (OSError, MichiError):
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # no deadline: nothing waits for this thread
        try:
            if token_of(lock_dir) == token:
                fs.remove_lock_dir(lock_dir)
                events.append(state_dir, "release_late", command=command)
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    except (OSError, MichiError):
        pass  # the lock stays for its lease to run out, as it would have without this thread
    finally:
        with contextlib.suppress(OSError):
            os.close(fd)
