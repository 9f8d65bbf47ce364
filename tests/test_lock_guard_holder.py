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
from dataclasses import replace
from pathlib import Path

import pytest
from lockkit import new_lock
from txnkit import gated_hook

from michi.lock import LockTimeout, events, fs
from michi.lock.record import read_owner
from michi.lock.record import write_owner as publish
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
    """The renewal is skipped, as after a pause; the release leaves the lock in place and says why. Before,
    both blocked until the stopped process was resumed."""
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


def test_a_long_lived_holder_lets_a_lock_left_in_place_go_once_the_guard_is_free(
    local_repo: Path,
    monkeypatch: pytest.MonkeyPatch,
    stop_in_guard: Callable[[Path], subprocess.Popen[bytes]],
) -> None:
    """The holder's process stays alive (as `michi mcp` does) with a lease of minutes: once the stopped
    process ends, the lock is gone without waiting for the lease, and the event log says how. Before, it
    counted as held, by a live process, until the lease ran out."""
    monkeypatch.setattr(fs, "GUARD_WAIT", 0.3)
    lock = new_lock(local_repo, ttl=300)
    lock.acquire(0)
    lock_dir = local_repo / ".michi.lock"
    stopped = stop_in_guard(lock.repo.state_dir)
    assert _within(lock.release, 30) is None
    assert lock.left is not None and lock_dir.exists()
    taker = new_lock(local_repo)
    with pytest.raises(LockTimeout):
        taker.acquire(0)  # still held, by this live process, while the guard is stuck

    stopped.kill()
    stopped.wait()
    taker.acquire(30)  # would wait out the 300 s lease without the holder's own late release
    taker.release()
    log = events.log_path(lock.repo.state_dir).read_text()
    kinds = [json.loads(line)["kind"] for line in log.splitlines()]
    assert "release_late" in kinds, kinds


def test_a_late_release_leaves_a_lock_that_is_no_longer_its_own(
    local_repo: Path,
    monkeypatch: pytest.MonkeyPatch,
    stop_in_guard: Callable[[Path], subprocess.Popen[bytes]],
) -> None:
    """Once the guard is free, the late release removes the lock only if it still holds this holder's
    token: a lock taken over meanwhile (the lease run out) is the new holder's and stays."""
    monkeypatch.setattr(fs, "GUARD_WAIT", 0.3)
    lock = new_lock(local_repo, ttl=300)
    lock.acquire(0)
    lock_dir = local_repo / ".michi.lock"
    stopped = stop_in_guard(lock.repo.state_dir)
    before = threading.enumerate()
    assert _within(lock.release, 30) is None
    late = [t for t in threading.enumerate() if t not in before and t.name == "michi-late-release"]
    assert len(late) == 1
    owner = read_owner(lock_dir)
    assert owner is not None
    # As a taker would once the lease ran out: a new record, another token, in the same lock dir.
    publish(lock_dir, replace(owner, token="f" * len(owner.token)))

    stopped.kill()
    stopped.wait()
    late[0].join(30)
    assert not late[0].is_alive()
    after = read_owner(lock_dir)
    assert after is not None and after.token == "f" * len(owner.token)
