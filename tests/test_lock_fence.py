"""Fencing tokens (ADR 0003): every hold gets a higher fence than all before it in the repository; a
holder that lost its lock (paused past its lease, taken over, cleared by force) learns what happened and
michi's own transactions push nothing on a stale fence."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import git, run_michi
from lockkit import new_lock, wait_until

from michi import faults
from michi.lock import LockLost, admin
from michi.lock.procs import start_ticks
from michi.repo import find_repo
from michi.workflow import turn, txn


def test_fences_strictly_increase_and_show_in_status(cli, local_repo: Path) -> None:
    seen = []
    for _ in range(3):
        lock = new_lock(local_repo)
        lock.acquire(0)
        seen.append(lock.fence)
        status = cli(local_repo, "--json", "lock", "status").json()
        assert status["fence"] == lock.fence and status["holder"]["fence"] == lock.fence
        assert f"fence    {lock.fence}" in cli(local_repo, "lock", "status").stdout
        lock.release()
    assert seen == sorted(set(seen)) and seen[0] >= 1
    assert cli(local_repo, "--json", "lock", "status").json()["last_fence"] == seen[-1]
    assert f"last fence {seen[-1]}" in cli(local_repo, "lock", "status").stdout


@pytest.mark.parametrize("damage", ["emptied", "garbled", "removed"])
def test_fences_keep_rising_after_the_guard_lost_its_counter(local_repo: Path, damage: str) -> None:
    """The guard file keeps the last fence; emptied, garbled, or removed as `lock_path_invalid` advises,
    the lock's event log still names the last one, and the next hold goes on above it, never from 1."""
    seen = []
    for _ in range(3):
        lock = new_lock(local_repo)
        lock.acquire(0)
        seen.append(lock.fence)
        lock.release()
    guard = local_repo / ".git" / "michi" / "lock.guard"
    if damage == "emptied":
        guard.write_bytes(b"")
    elif damage == "garbled":
        guard.write_bytes(b"x" + guard.read_bytes()[1:])
    else:
        guard.unlink()

    lock = new_lock(local_repo)
    lock.acquire(0)
    after = lock.fence
    lock.release()

    assert after is not None and after > seen[-1] >= 3


def test_a_takeover_leaves_the_old_holder_a_stale_fence(local_repo: Path) -> None:
    old = new_lock(local_repo, ttl=0.3)
    old.acquire(0)  # never renewed: its lease runs out
    wait_until(lambda: run_michi(local_repo, "--json", "lock", "status").json()["stale"], 30, "expiry")
    new = new_lock(local_repo, command="the newcomer")
    new.acquire(0)
    assert (new.fence or 0) > (old.fence or 0)
    with pytest.raises(LockLost) as lost:
        old.ensure_held()
    assert "its lease expired" in lost.value.message and "the newcomer" in lost.value.message
    assert lost.value.details["holder_fence"] == new.fence
    new.release()
    with pytest.raises(LockLost):
        old.ensure_held()  # free again, but the fence moved on: still not ours


def test_a_paused_holder_learns_it_was_paused_and_by_whom_it_was_replaced(local_repo: Path) -> None:
    env = {**os.environ, "MICHI_LOCK_TTL": "1"}
    script = "echo $MICHI_LOCK_FENCE > a.fence; echo $$ > a.pid; while :; do sleep 0.1; done"
    holder = subprocess.Popen(
        [sys.executable, "-m", "michi", "lock", "run", "--", "sh", "-c", script],
        cwd=local_repo,
        env=env,
        stderr=subprocess.PIPE,
        text=True,
    )
    wait_until(
        lambda: (local_repo / "a.pid").is_file() and (local_repo / "a.pid").read_text(), 60, "A's command"
    )
    holder.send_signal(signal.SIGSTOP)  # michi paused (debugger, suspend); its command runs on
    try:
        taker = run_michi(
            local_repo,
            "lock",
            "run",
            "--wait",
            "60",
            "--",
            "sh",
            "-c",
            "echo $MICHI_LOCK_FENCE > b.fence",
            env=env,
        )
        assert taker.exit_code == 0, taker.stderr
    finally:
        holder.send_signal(signal.SIGCONT)
    assert holder.wait(60) == 75
    stderr = holder.stderr.read() if holder.stderr else ""
    assert "paused or starved" in stderr and "took it over" in stderr
    a_fence, b_fence = int((local_repo / "a.fence").read_text()), int((local_repo / "b.fence").read_text())
    assert b_fence > a_fence and f"fence {b_fence}" in stderr
    assert start_ticks(int((local_repo / "a.pid").read_text())) is None  # stopped once michi woke up


@pytest.mark.parametrize("turns", [False, True])
def test_a_transaction_pushes_nothing_on_a_stale_fence(cli, repo: Path, remote, monkeypatch, turns) -> None:
    """A holder that finds its fence stale right before the push pushes nothing, touches nothing, and
    says its operation is the next holder's to finish. `turns`: the clone looks at turns (ADR 0004)
    and holds none, so its push would carry the turn's release: a lock lost while the push is named
    must not be taken for a remote refusing turns, which is pushed again without them."""
    assert cli(repo, "init").exit_code == 0
    before = remote.head()
    paths = find_repo(repo)
    stealer = new_lock(repo, command="the stealer")
    real_point = faults.point
    gates: list[str] = []

    def steal_at_commit(name: str) -> None:
        if name == "spawned":
            gates.append(name)
        if name == "committed":  # built the commit, about to push: someone clears the lock and takes it
            admin.release(paths, token=None, force=True, yes=True)
            stealer.acquire(0)
        real_point(name)

    monkeypatch.setattr(faults, "point", steal_at_commit)
    if turns:
        monkeypatch.setattr(txn.Transaction, "_contended", lambda self: True)
        monkeypatch.setattr(turn.Turn, "wait", lambda self, want, limit=None: None)
    result = cli(repo, "--json", "task", "add", "pushed once, later")
    stealer.release()
    assert gates == ["spawned"]  # one push started, held at its gate, never opened
    assert remote.head() == before
    assert git(remote.bare, "log", "--format=%s", "main").count("michi:") == 1  # only init's commit
    # The operation stays in the journal, the next holder's to finish: running it again would do it twice.
    assert result.exit_code == 5
    error = result.json()["error"]
    assert error["code"] == "push_unknown" and "do not run this command again" in error["hint"]
    assert "--force" in error["message"] and error["holder_fence"] > error["fence"]
    monkeypatch.setattr(faults, "point", real_point)
    assert cli(repo, "sync").exit_code == 0
    subjects = git(remote.bare, "log", "--format=%s", "main").splitlines()
    assert subjects.count("michi: task add 1") == 1 and len(subjects) == 3  # init, setup, the add
    listed = cli(repo, "--json", "task", "list").json()
    assert [t["description"] for t in listed] == ["pushed once, later"]
