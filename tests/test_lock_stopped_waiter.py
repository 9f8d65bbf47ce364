"""A stopped process never stalls the lock's queue, and what still stands in the way is named (ADR 0003).

A waiter stopped while queued (SIGSTOP, Ctrl-Z, a debugger) keeps its ticket's flock: it was counted as
the next in line for ever, so with the lock free every `--wait 0` exited 75 "held by a holder that has not
published its record yet", and every other waiter sat out its whole `--wait`. It is passed over now, and
keeps its place for when it resumes.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import run_michi
from lockkit import new_lock, stop_in_guard, wait_until

from michi.lock import events
from michi.lock.repolock import QUEUE_DIR, RepoLock

MICHI = [sys.executable, "-m", "michi"]  # run in the repository (`cwd`)


def _lock_run(repo: Path, wait: float, line: str) -> subprocess.Popen[str]:
    """`michi lock run --wait WAIT` whose command appends `line` to the shared `order` file."""
    return subprocess.Popen(
        [
            *MICHI,
            "lock",
            "run",
            "--wait",
            str(wait),
            "--",
            "sh",
            "-c",
            f"echo {line} >> {repo.parent / 'order'}",
        ],
        cwd=repo,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )


def _queued(repo: Path, pid: int) -> bool:
    queue = repo / ".git" / "michi" / QUEUE_DIR
    return queue.is_dir() and any(f".{pid}." in name for name in os.listdir(queue))


def _stop(proc: subprocess.Popen[str]) -> None:
    """SIGSTOP a child of ours; returns once the kernel reports it stopped."""
    os.kill(proc.pid, signal.SIGSTOP)
    pid, status = os.waitpid(proc.pid, os.WUNTRACED)
    assert pid == proc.pid and os.WIFSTOPPED(status), status


def _order(repo: Path) -> list[str]:
    path = repo.parent / "order"
    return path.read_text().split() if path.exists() else []


def _waited(repo: Path, line: str) -> float:
    """How long the `lock run` that wrote `line` waited for the lock, from the lock's event log."""
    holds = [e for e in events.read(repo / ".git" / "michi") if e["kind"] == "hold" and line in e["command"]]
    assert len(holds) == 1, holds
    return float(holds[0]["wait"])


@pytest.fixture
def procs() -> Iterator[list[subprocess.Popen[str]]]:
    started: list[subprocess.Popen[str]] = []
    yield started
    for proc in started:
        if proc.poll() is None:
            proc.kill()  # a stopped process is killed too
            proc.wait()


def _held_with_one_queued(
    local_repo: Path, procs: list[subprocess.Popen[str]]
) -> tuple[RepoLock, subprocess.Popen[str]]:
    """The lock held here, and `lock run` W1 queued for it."""
    holder = new_lock(local_repo)
    holder.acquire(0)
    first = _lock_run(local_repo, 60, "W1")
    procs.append(first)
    wait_until(lambda: _queued(local_repo, first.pid), what="W1 queued")
    return holder, first


def test_a_stopped_queued_waiter_is_passed_over_and_served_once_resumed(
    local_repo: Path, procs: list[subprocess.Popen[str]]
) -> None:
    holder, first = _held_with_one_queued(local_repo, procs)
    _stop(first)
    holder.release()  # the lock is free; W1, the first in line, cannot take it
    order = local_repo.parent / "order"
    # A newcomer with one try takes it (it exited 75 "has not published its record yet").
    once = run_michi(
        local_repo, "--json", "lock", "run", "--wait", "0", "--", "sh", "-c", f"echo W0 >> {order}"
    )
    assert once.exit_code == 0, once.stderr
    # One with a wait takes it at once, not at its deadline (it sat out the whole wait before).
    later = run_michi(local_repo, "lock", "run", "--wait", "5", "--", "sh", "-c", f"echo W2 >> {order}")
    assert later.exit_code == 0, later.stderr
    assert _order(local_repo) == ["W0", "W2"]  # both done while W1 was still stopped
    assert _waited(local_repo, "W2") < 2.5
    os.kill(first.pid, signal.SIGCONT)  # it kept its place and waits on: the free lock is its
    assert first.wait(30) == 0, first.stderr.read() if first.stderr else ""
    assert _order(local_repo) == ["W0", "W2", "W1"]


def test_a_waiter_behind_one_that_stops_takes_the_lock_at_its_release(
    local_repo: Path, procs: list[subprocess.Popen[str]]
) -> None:
    holder, first = _held_with_one_queued(local_repo, procs)
    second = _lock_run(local_repo, 10, "W2")
    procs.append(second)
    wait_until(lambda: _queued(local_repo, second.pid), what="W2 queued behind W1")
    _stop(first)  # while W2 waits on W1's ticket
    holder.release()
    assert second.wait(30) == 0, second.stderr.read() if second.stderr else ""
    assert _order(local_repo) == ["W2"]  # W1 is still stopped
    assert _waited(local_repo, "W2") < 5  # served at the release, not at its deadline (10 s)
    os.kill(first.pid, signal.SIGCONT)
    assert first.wait(30) == 0, first.stderr.read() if first.stderr else ""
    assert _order(local_repo) == ["W2", "W1"]


_WAITER = """
import os, sys
from pathlib import Path
from michi.lock.queue import Queue
Queue(Path(sys.argv[1])).join(os.getpid())
print("queued", flush=True)
sys.stdin.read()
"""


def test_a_free_lock_left_to_a_running_waiter_names_it(
    local_repo: Path, procs: list[subprocess.Popen[str]]
) -> None:
    """A one-try command that finds the lock free but a running waiter first in line says so (it said
    the lock was held by a holder that had not published its record); once that waiter is stopped, the
    command takes the lock."""
    (local_repo / ".git" / "michi").mkdir()
    waiter = subprocess.Popen(
        [sys.executable, "-c", _WAITER, str(local_repo / ".git" / "michi" / QUEUE_DIR)],
        cwd=local_repo,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    procs.append(waiter)
    assert waiter.stdout is not None and waiter.stdout.readline() == "queued\n"
    busy = run_michi(local_repo, "--json", "lock", "run", "--wait", "0", "--", "true")
    assert busy.exit_code == 75, busy.stderr
    error = json.loads(busy.stdout)["error"]
    assert "has not published" not in error["message"], error
    assert "free" in error["message"] and f"PID {waiter.pid}" in error["message"], error
    assert error["holder"] is None and error["next_waiter"] == waiter.pid, error
    _stop(waiter)
    assert run_michi(local_repo, "lock", "run", "--wait", "0", "--", "true").exit_code == 0


def test_a_stopped_holder_is_named_with_kill_cont(
    local_repo: Path, procs: list[subprocess.Popen[str]]
) -> None:
    pidfile = local_repo.parent / "child.pid"
    holder = subprocess.Popen(
        [*MICHI, "lock", "run", "--", "sh", "-c", f"echo $$ > {pidfile}; exec sleep 60"],
        cwd=local_repo,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    procs.append(holder)
    wait_until(lambda: pidfile.exists() and pidfile.read_text().strip() != "", what="the holder's command")
    _stop(holder)  # as Ctrl-Z leaves it: michi stopped, holding the lock
    for wait in ("0", "0.3"):
        busy = run_michi(local_repo, "--json", "lock", "run", "--wait", wait, "--", "true")
        assert busy.exit_code == 75, busy.stderr
        error = json.loads(busy.stdout)["error"]
        assert f"PID {holder.pid} " in error["message"] and ", which is stopped" in error["message"], error
        assert f"kill -CONT {holder.pid}" in error["hint"] and error["holder_stopped"] is True, error
    os.kill(holder.pid, signal.SIGCONT)
    holder.terminate()
    assert holder.wait(30) == 130


def test_one_try_at_a_guard_held_by_a_stopped_process_names_it(local_repo: Path) -> None:
    """`--wait 0` while a process stopped inside the guard (renewing its lease) said the lock was held by
    a holder that had not published its record yet; a wait said who it was (tests/test_lock_wait.py)."""
    state = local_repo / ".git" / "michi"
    state.mkdir()
    stopped = stop_in_guard(state)
    try:
        busy = run_michi(local_repo, "--json", "lock", "run", "--wait", "0", "--", "true")
        assert busy.exit_code == 75, busy.stderr
        error = json.loads(busy.stdout)["error"]
        assert f"PID {stopped.pid}, which is stopped" in error["message"], error
        assert f"kill -CONT {stopped.pid}" in error["hint"], error
    finally:
        stopped.kill()
        stopped.wait()
