"""Helpers for the lock tests: worker bodies that run in real processes, owner records made by hand."""

from __future__ import annotations

import json
import multiprocessing
import os
import random
import select
import signal
import socket
import subprocess
import sys
import time
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from michi.lock import LockContention, RepoLock
from michi.lock.procs import start_ticks, stat
from michi.lock.record import OWNER_FILE, boot_id, iso
from michi.repo import find_repo

CTX = multiprocessing.get_context("fork")  # cheap to start; no worker inherits a held lock (none is)


def new_lock(repo: Path, **kw: Any) -> RepoLock:
    kw.setdefault("ttl", 30.0)
    kw.setdefault("command", "test")
    kw.setdefault("agent", None)
    return RepoLock(find_repo(repo), **kw)


def occupy(marker: Path) -> int:
    """Enter the critical section: 1 if someone alive is already in it (an overlap), else 0.
    A marker left by a holder that was SIGKILLed inside is its, not an overlap."""
    overlaps = 0
    while True:
        try:
            fd = os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
            break
        except FileExistsError:
            try:
                other = int(marker.read_text() or "0")
            except (FileNotFoundError, ValueError):
                continue
            if other and start_ticks(other) is None:
                marker.unlink(missing_ok=True)
                continue
            overlaps += 1
            return overlaps
    os.write(fd, str(os.getpid()).encode())
    os.close(fd)
    return 0


def leave(marker: Path) -> int:
    """Leave it: 1 if the marker is no longer ours (someone entered meanwhile)."""
    try:
        mine = marker.read_text() == str(os.getpid())
    except FileNotFoundError:
        return 1
    marker.unlink()
    return 0 if mine else 1


def exclusion_worker(repo: Path, marker: Path, rounds: int, kill_at: int | None, out: Connection) -> None:
    lock = new_lock(repo)
    overlaps = 0
    for i in range(rounds):
        lock.acquire(120)
        overlaps += occupy(marker)
        if i == kill_at:
            out.send(("killed", overlaps))
            os.kill(os.getpid(), signal.SIGKILL)
        for _ in range(random.randint(0, 3)):
            os.sched_yield()
        overlaps += leave(marker)
        lock.release()
    out.send(("done", overlaps))


def race_worker(repo: Path, go: Any, done: Any, out: Connection) -> None:
    lock = new_lock(repo)
    go.wait()
    try:
        lock.acquire(0)
        out.send(True)
    except LockContention:
        out.send(False)
        return
    done.wait()
    lock.release()


def fifo_worker(repo: Path, index: int, log: Path) -> None:
    lock = new_lock(repo)
    lock.acquire(60)
    with log.open("a") as fh:
        fh.write(f"{index}\n")
    lock.release()


def held_worker(repo: Path, ttl: float, ready: Connection, hold: float) -> None:
    lock = new_lock(repo, ttl=ttl)
    with lock.held(10):
        ready.send(lock.token)
        time.sleep(hold)


def dead_pid() -> int:
    """A PID that just exited (and was reaped): no process has it now."""
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def write_record(
    repo: Path,
    *,
    pid: int,
    host: str | None = None,
    expires_in: float | None = 300.0,
    pid_ticks: int | None = -1,
    token: str = "f" * 32,
    **extra: Any,
) -> Path:
    """Put a hand-made owner record in `.michi.lock/`, as a crashed or foreign holder leaves it."""
    lock_dir = repo / ".michi.lock"
    lock_dir.mkdir(exist_ok=True)
    now = time.time()
    record = {
        "pid": pid,
        "host": host or socket.gethostname(),
        "boot_id": boot_id(),
        "pid_ticks": start_ticks(pid) if pid_ticks == -1 else pid_ticks,
        "created": iso(now - 1),
        "expires": None if expires_in is None else iso(now + expires_in),
        "token": token,
        "command": "hand-made",
        "agent": "tester",
        "version": 2,
        **extra,
    }
    (lock_dir / OWNER_FILE).write_text(json.dumps(record))
    return lock_dir


def age(path: Path, seconds: float) -> None:
    then = time.time() - seconds
    os.utime(path, (then, then))


def wait_until(predicate: Any, timeout: float = 20.0, what: str = "condition") -> None:
    """Await a condition another process makes true (files it writes): bounded, fails loudly."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.002)


def michi_on_path(tmp_path: Path) -> dict[str, str]:
    """An environment whose `michi` is this checkout's, run by this interpreter: for shell scripts."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    shim = bin_dir / "michi"
    shim.write_text(f'#!/bin/sh\nexec {sys.executable} -m michi "$@"\n')
    shim.chmod(0o755)
    return {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}


def bash(
    cwd: Path, script: str, env: dict[str, str], timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """Run a shell script as a user's script would be run, with bash, stdout and stderr captured."""
    return subprocess.run(
        ["bash", "-c", script], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout
    )


def await_exit(pid: int, timeout: float = 20.0) -> None:
    """Await the end of a process that is not our child (a pidfd turns readable when it ends)."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return
    try:
        ready, _, _ = select.select([fd], [], [], timeout)
        assert ready, f"process {pid} still runs after {timeout}s"
    finally:
        os.close(fd)


def sentinel_of(michi_pid: int, timeout: float = 20.0) -> int:
    """The sentinel a `lock run` michi forked for its command's group (`michi.lock.sentinel`)."""
    found: list[int] = []

    def named() -> bool:
        for name in os.listdir("/proc"):
            proc = stat(int(name)) if name.isdigit() else None
            if proc is not None and proc.ppid == michi_pid:
                try:
                    comm = Path(f"/proc/{name}/comm").read_text().strip()
                except OSError:
                    continue
                if comm == "michi-sentinel":
                    found.append(proc.pid)
                    return True
        return False

    wait_until(named, timeout, f"the sentinel of michi {michi_pid}")
    return found[0]


# A grandchild of michi (sh -> sh) that logs its PID, then ticks until stopped.
TICKER = "sh -c 'echo $$ > ticker.pid; while :; do echo tick >> log; sleep 0.1; done'; echo after >> log"


def start_lock_run(repo: Path, script: str, **env: str) -> subprocess.Popen[str]:
    """`michi lock run -- sh -c SCRIPT` as a separate process, its stderr kept for the test."""
    return subprocess.Popen(
        [sys.executable, "-m", "michi", "lock", "run", "--", "sh", "-c", script],
        cwd=repo,
        env={**os.environ, **env},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )


def ticker_pid(repo: Path) -> int:
    """The PID of a running `TICKER`'s inner shell, once it ticks."""
    wait_until(lambda: (repo / "log").is_file() and "tick" in (repo / "log").read_text(), 60, "the ticker")
    return int((repo / "ticker.pid").read_text())


_STOPPED_IN_GUARD = """
import fcntl, os, signal, sys
guard = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o644)
fcntl.flock(guard, fcntl.LOCK_EX)  # as a holder does for a moment, renewing its lease
os.kill(os.getpid(), signal.SIGSTOP)
"""


def stop_in_guard(state_dir: Path) -> subprocess.Popen[bytes]:
    """A process that takes the lock's guard (in `state_dir`) and stops itself there, as a holder stopped
    while it renews its lease: returned once stopped; kill it to free the guard."""
    proc = subprocess.Popen([sys.executable, "-c", _STOPPED_IN_GUARD, str(state_dir / "lock.guard")])
    pid, status = os.waitpid(proc.pid, os.WUNTRACED)
    assert pid == proc.pid and os.WIFSTOPPED(status), status
    return proc
