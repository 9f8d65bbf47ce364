"""The holder's own turns at the lock's guard (renewal, release, `lock run`'s group) wait a bounded time:
a process stopped inside the guard (a waiter's takeover check hit by Ctrl-Z or SIGSTOP) holds it until it
is resumed, and must not hang the command that holds the lock (ADR 0003)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from lockkit import new_lock
from txnkit import gated_hook

from michi.lock import LockTimeout, fs
from michi.lock.record import read_owner
from tests.conftest import Remote, run_michi

_STOPPED_IN_GUARD = """
import fcntl, os, signal, sys
guard = os.open(sys.argv[1], os.O_RDWR)
fcntl.flock(guard, fcntl.LOCK_EX)  # as a waiter does for a moment, checking whether the lock is stale
os.kill(os.getpid(), signal.SIGSTOP)
"""


@pytest.fixture
def stop_in_guard() -> Iterator[Callable[[Path], subprocess.Popen[bytes]]]:
    """Starts a process that takes the guard of a repository (its state folder given) and stops itself
    there; every one started is killed at the end (its flock goes with it)."""
    started: list[subprocess.Popen[bytes]] = []

    def start(state_dir: Path) -> subprocess.Popen[bytes]:
        proc = subprocess.Popen([sys.executable, "-c", _STOPPED_IN_GUARD, str(state_dir / fs.GUARD_FILE)])
        started.append(proc)
        pid, status = os.waitpid(proc.pid, os.WUNTRACED)  # returns once it stopped itself
        assert pid == proc.pid and os.WIFSTOPPED(status), status
        return proc

    yield start
    for proc in started:
        proc.kill()
        proc.wait()


def _within(call: Callable[[], object], seconds: float) -> BaseException | None:
    """Run `call` in a thread: what it raised, None if it returned; a failure if it is still running after
    `seconds` (the guard's holder is killed at the test's end, which frees the thread)."""
    caught: list[BaseException | None] = []

    def run() -> None:
        try:
            call()
            caught.append(None)
        except BaseException as exc:  # handed to the test's thread
            caught.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"{call} is still waiting for the stopped process's guard"
    return caught[0]


def test_renewal_and_release_do_not_wait_for_a_process_stopped_in_the_guard(
    local_repo: Path,
    monkeypatch: pytest.MonkeyPatch,
    stop_in_guard: Callable[[Path], subprocess.Popen[bytes]],
) -> None:
    """The renewal is skipped, as after a pause; the release leaves the lock in place and says why; the
    lock is taken over once its lease ran out and the guard is free. Before, both blocked until the
    stopped process was resumed."""
    monkeypatch.setattr(fs, "GUARD_WAIT", 0.3)
    lock = new_lock(local_repo, ttl=0.6)
    lock.acquire(0)
    lock_dir = local_repo / ".michi.lock"
    before = read_owner(lock_dir)
    assert before is not None
    stopped = stop_in_guard(lock.repo.state_dir)

    assert _within(lock.renew, 30) is None
    after = read_owner(lock_dir)
    assert after is not None and after.expires == before.expires  # not renewed
    raised = _within(lambda: lock.set_group(os.getpgid(0), None), 30)
    assert isinstance(raised, LockTimeout) and f"PID {stopped.pid}, which is stopped" in str(raised)
    assert _within(lock.release, 30) is None
    assert lock.left is not None and f"PID {stopped.pid}, which is stopped" in lock.left
    assert f"kill -CONT {stopped.pid}" in lock.left
    still = read_owner(lock_dir)
    assert still is not None and still.token == before.token  # left in place, not removed unguarded

    stopped.kill()
    stopped.wait()
    taker = new_lock(local_repo)
    taker.acquire(30)  # the lease ran out: taken over
    taker.release()


def test_a_command_whose_release_finds_the_guard_stuck_answers_and_names_it(
    remote: Remote, stop_in_guard: Callable[[Path], subprocess.Popen[bytes]]
) -> None:
    """`michi task add` holding the lock while another process stops inside the guard: the add lands,
    exits 0 once its release gave up (10 s), and its note names the stopped process."""
    repo = remote.clone("work")
    assert run_michi(repo, "init").exit_code == 0
    signals = remote.root / "signals"
    gated_hook(remote.bare, signals)
    add = subprocess.Popen(
        [sys.executable, "-m", "michi", "--json", "task", "add", "held"],
        cwd=repo,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "MICHI_SERVER": "off"},
    )
    try:
        deadline = time.monotonic() + 60
        while not (signals / "reached.1").exists():  # its push waits at the remote, the lock held
            assert add.poll() is None, add.communicate()
            assert time.monotonic() < deadline, "the add's push never reached the remote"
            time.sleep(0.01)
        stopped = stop_in_guard(repo / ".git" / "michi")
        (signals / "open").touch()
        out, err = add.communicate(timeout=120)
    finally:
        if add.poll() is None:
            add.kill()
            add.wait()
    assert add.returncode == 0, err
    notes = json.loads(out)["transaction"]["notes"]
    assert any(f"PID {stopped.pid}, which is stopped" in note for note in notes), notes
    assert (
        remote.head()
        == subprocess.run(
            ["git", "rev-parse", "main"], cwd=repo, capture_output=True, text=True, check=True
        ).stdout.strip()
    )
    os.kill(stopped.pid, signal.SIGKILL)
    stopped.wait()
    assert run_michi(repo, "task", "add", "next").exit_code == 0  # the lock left behind is taken over
