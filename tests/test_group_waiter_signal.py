"""A `michi task add` waiting for the repo lock as a group-commit waiter (ADR 0017) that gets Ctrl-C,
SIGTERM or SIGHUP: before the lock's holder took its operation the offer is withdrawn and it exits 130
(nothing done); once taken the operation lands anyway, so the signal is held until the command has
answered with the holder's outcome (exit 0, the new task's id), as after a push that landed (ADR 0004)."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import Remote, run_michi, spawn_michi
from txnkit import assert_exactly_once

from michi.lock import RepoLock


def stopped(pid: int) -> bool:
    """Whether process `pid` is stopped (SIGSTOP): the state after the command name in /proc's stat."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    return stat[stat.rindex(")") + 2] == "T"


def until(done: Callable[[], bool], *procs: subprocess.Popen[str]) -> None:
    """Wait for `done`, failing at once if one of `procs` ended first (or after a minute)."""
    deadline = time.monotonic() + 60
    while not done():
        ended = [p for p in procs if p.poll() is not None]
        assert not ended, (ended[0].args, ended[0].communicate())
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def count(repo: Path, suffix: str) -> int:
    return len(list((repo / ".git/michi/group").glob("*" + suffix)))


def finish(proc: subprocess.Popen[str]) -> tuple[int, Any]:
    out, err = proc.communicate(timeout=120)
    assert out, err
    return proc.returncode, json.loads(out)


def add(repo: Path, what: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    return spawn_michi(repo, "--json", "task", "add", what, "--wait", "600", env=env)


def end(lock: RepoLock, *procs: subprocess.Popen[str] | None) -> None:
    """Free the lock and kill what still runs, stopped at a fault point or not."""
    lock.release()
    for proc in procs:
        if proc is not None and proc.poll() is None:
            proc.send_signal(signal.SIGCONT)
            proc.kill()


def assert_the_waiter_answered(remote: Remote, work: Path, code: int, out: Any) -> list[Any]:
    """The signalled waiter answered with its task (exit 0); both tasks landed once, nothing of the
    group commit is left behind. Returns the task list."""
    assert code == 0 and out["description"] == "waiter", out
    listed: list[Any] = run_michi(work, "--json", "task", "list").json()
    assert sorted(t["description"] for t in listed) == ["holder", "waiter"]
    assert count(work, "") == 0
    assert_exactly_once(remote.bare)
    return listed


@pytest.fixture
def work(remote: Remote) -> Path:
    repo = remote.clone("work")
    assert run_michi(repo, "init").exit_code == 0
    return repo


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_a_signal_withdraws_an_untaken_offer_and_is_held_once_it_was_taken(
    remote: Remote, work: Path, sig: signal.Signals
) -> None:
    """Three adds wait behind a lock. The second is signalled while its offer waits: withdrawn, exit
    130. The first then holds the lock, takes the third's offer and pauses (a fault point); the third,
    signalled twice now, exited 130 "do not repeat: it lands anyway". It answers with its task."""
    from lockkit import new_lock

    lock = new_lock(work, ttl=300)
    lock.acquire(0)
    paused = {"MICHI_FAULT": "locked:SIGSTOP"}  # past taking the offers and journaling them
    holder = waiter = None
    try:
        holder = add(work, "holder", env=paused)
        until(lambda: count(work, ".offer") == 1, holder)
        untaken = add(work, "given up")
        until(lambda: count(work, ".offer") == 2, holder, untaken)
        waiter = add(work, "waiter")
        until(lambda: count(work, ".offer") == 3, holder, untaken, waiter)
        untaken.send_signal(sig)
        code, out = finish(untaken)
        assert code == 130 and out["error"]["code"] in {"interrupted", "terminated"}, out
        assert count(work, ".offer") == 2  # withdrawn: nobody may take it
        lock.release()
        until(lambda: stopped(holder.pid), holder, waiter)
        assert count(work, ".offer") == 0 and count(work, ".taken") == 1  # the waiter's, taken
        waiter.send_signal(sig)
        waiter.send_signal(sig)
        with pytest.raises(subprocess.TimeoutExpired):
            waiter.wait(timeout=1)  # held: the holder has its operation
        holder.send_signal(signal.SIGCONT)
        assert finish(holder)[0] == 0
        code, out = finish(waiter)
    finally:
        end(lock, holder, waiter)
    listed = assert_the_waiter_answered(remote, work, code, out)
    assert [t["id"] for t in listed if t["description"] == "waiter"] == [out["id"]]


def test_a_ctrl_c_as_the_holder_takes_the_offer_answers_the_holders_outcome(
    remote: Remote, work: Path
) -> None:
    """Ctrl-C comes while the offer is still the waiter's, and the holder takes it before the waiter
    withdraws it (the waiter pauses at a fault point in between). The waiter said "interrupted" (130);
    its operation lands anyway, so it answers with its task."""
    from lockkit import new_lock

    lock = new_lock(work, ttl=300)
    lock.acquire(0)
    waiter = holder = None
    try:
        waiter = add(work, "waiter", env={"MICHI_FAULT": "withdrawing:SIGSTOP"})
        until(lambda: count(work, ".offer") == 1, waiter)
        holder = add(work, "holder")
        until(lambda: count(work, ".offer") == 2, waiter, holder)
        waiter.send_signal(signal.SIGINT)
        until(lambda: stopped(waiter.pid), waiter)  # interrupted, about to withdraw its offer
        lock.release()
        assert finish(holder)[0] == 0  # it took the waiter's offer, landed it and answered
        assert count(work, ".answer") == 1
        waiter.send_signal(signal.SIGCONT)
        code, out = finish(waiter)
    finally:
        end(lock, waiter, holder)
    assert_the_waiter_answered(remote, work, code, out)
