"""Waiting for the lock: deadlines, one try, FIFO order, handoff signalling, signals (ADR 0003)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from lockkit import CTX, fifo_worker, held_worker, new_lock, wait_until

from michi.lock import LockContention, LockTimeout, admin, fs
from michi.lock.procs import start_ticks
from michi.lock.record import read_owner
from michi.lock.wake import POLL_CAP
from michi.repo import find_repo


def test_timeout_is_honoured_within_one_backoff_step(local_repo: Path) -> None:
    holder = new_lock(local_repo)
    holder.acquire(0)
    seen: list[float] = []
    waiter = new_lock(local_repo, on_wait=lambda owner, waited: seen.append(waited))
    start = time.monotonic()
    with pytest.raises(LockTimeout) as caught:
        waiter.acquire(0.5)
    elapsed = time.monotonic() - start
    assert 0.5 <= elapsed < 0.5 + POLL_CAP + 0.1
    assert caught.value.details["holder"]["pid"] == os.getpid()
    assert seen and max(seen) < 0.6  # the spinner hook heard about the wait while it lasted
    holder.release()
    waiter.acquire(0)
    waiter.release()


def test_wait_zero_is_one_try(local_repo: Path) -> None:
    holder = new_lock(local_repo)
    holder.acquire(0)
    start = time.monotonic()
    with pytest.raises(LockContention) as caught:
        new_lock(local_repo).acquire(0)
    assert time.monotonic() - start < 0.2
    assert caught.value.code == "lock_busy" and caught.value.exit_code == 75
    holder.release()


def test_waiters_get_the_lock_in_arrival_order(local_repo: Path) -> None:
    holder = new_lock(local_repo)
    holder.acquire(0)
    log = local_repo.parent / "order"
    queue = local_repo / ".git" / "michi" / "lock-queue"
    procs = []
    for index in range(5):
        proc = CTX.Process(target=fifo_worker, args=(local_repo, index, log))
        proc.start()
        procs.append(proc)
        # the next one arrives only once this one queues: arrival order is then well defined
        wait_until(lambda n=index + 1: len(list(queue.glob("*.ticket"))) == n, what=f"waiter {index} queued")
    holder.release()
    for proc in procs:
        proc.join(30)
        assert proc.exitcode == 0
    assert log.read_text().split() == ["0", "1", "2", "3", "4"]


def test_holder_hears_that_someone_waits(local_repo: Path) -> None:
    asked = threading.Event()
    holder = new_lock(local_repo)
    holder.on_release_requested(asked.set)
    with holder.held(0):
        proc = CTX.Process(target=fifo_worker, args=(local_repo, 0, local_repo.parent / "log"))
        proc.start()
        assert asked.wait(10)
    proc.join(20)
    assert proc.exitcode == 0


def test_sigterm_while_held_releases_the_lock(local_repo: Path) -> None:
    recv, send = CTX.Pipe(duplex=False)
    proc = CTX.Process(target=held_worker, args=(local_repo, 30.0, send, 60.0))
    proc.start()
    assert recv.poll(20)
    assert (local_repo / ".michi.lock").is_dir()
    os.kill(proc.pid, signal.SIGTERM)
    proc.join(20)
    assert proc.exitcode == 1  # Terminated was raised in the main thread and unwound the `with`
    assert not (local_repo / ".michi.lock").exists()


def _michi(repo: Path, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "michi", "-C", str(repo), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_lock_run_releases_and_stops_its_child_on_signal(local_repo: Path, signum: int) -> None:
    pidfile = local_repo.parent / "child.pid"
    proc = _michi(local_repo, "lock", "run", "--", "sh", "-c", f"echo $$ > {pidfile}; exec sleep 60")
    wait_until(lambda: pidfile.exists() and pidfile.read_text().strip() != "", what="child started")
    child = int(pidfile.read_text())
    proc.send_signal(signum)
    assert proc.wait(20) == 130
    assert not (local_repo / ".michi.lock").exists()
    wait_until(lambda: start_ticks(child) is None, what="child stopped")


def test_lock_run_child_dies_with_a_killed_michi(local_repo: Path) -> None:
    pidfile = local_repo.parent / "child.pid"
    proc = _michi(local_repo, "lock", "run", "--", "sh", "-c", f"echo $$ > {pidfile}; exec sleep 60")
    wait_until(lambda: pidfile.exists() and pidfile.read_text().strip() != "", what="child started")
    child = int(pidfile.read_text())
    proc.kill()
    proc.wait(20)
    wait_until(lambda: start_ticks(child) is None, what="child killed with its parent")
    owner = read_owner(local_repo / ".michi.lock")
    assert owner is not None and owner.pid == proc.pid  # left behind, provably stale: its PID is dead
    new_lock(local_repo).acquire(0)


_STOPPED_IN_GUARD = """
import fcntl, os, signal, sys
from pathlib import Path
sys.path.insert(0, sys.argv[2])
from lockkit import new_lock
from michi.lock import fs

lock = new_lock(Path(sys.argv[1]), ttl=0.2)
lock.acquire(0)
guard = os.open(lock.repo.state_dir / fs.GUARD_FILE, os.O_RDWR)
fcntl.flock(guard, fcntl.LOCK_EX)  # as while it renews its lease
os.kill(os.getpid(), signal.SIGSTOP)
"""


def test_a_holder_stopped_inside_the_guard_does_not_hold_a_waiter_past_its_wait(
    local_repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SIGSTOP can land while the holder renews its lease, inside the guard flock: the lease then expires,
    but the guard stays held until the holder resumes. A waiter gives up at its deadline, as for a live
    holder; before, it blocked on the guard with no end (`michi lock run --wait 10` ran for minutes)."""
    tests = str(Path(__file__).resolve().parent)
    holder = subprocess.Popen([sys.executable, "-c", _STOPPED_IN_GUARD, str(local_repo), tests])
    try:
        pid, status = os.waitpid(holder.pid, os.WUNTRACED)  # returns once it stopped itself
        assert pid == holder.pid and os.WIFSTOPPED(status), status
        outcome: list[BaseException | None] = []

        def wait() -> None:
            try:
                new_lock(local_repo).acquire(0.5)
                outcome.append(None)
            except BaseException as exc:  # handed to the test's thread
                outcome.append(exc)

        waiter = threading.Thread(target=wait, daemon=True)
        waiter.start()
        waiter.join(30)
        assert not waiter.is_alive(), "the waiter is still blocked on the stopped holder's guard"
        assert len(outcome) == 1 and isinstance(outcome[0], LockTimeout), outcome
        said = str(outcome[0])
        assert f"guard is held by PID {holder.pid}, which is stopped" in said, said
        assert f"kill -CONT {holder.pid}" in (outcome[0].hint or "")
        # Nor does a forced release wait for it: it says the same, after its own wait.
        monkeypatch.setattr(fs, "GUARD_WAIT", 0.2)
        with pytest.raises(LockTimeout, match=f"PID {holder.pid}, which is stopped"):
            admin.release(find_repo(local_repo), token=None, force=True, yes=True)
    finally:
        holder.kill()  # a stopped process is killed too, and its flocks go with it
        holder.wait()
