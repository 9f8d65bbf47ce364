"""The sentinel (`michi.lock.sentinel`, ADR 0003 and 0009): when the michi running `lock run` dies, however,
what is left of its command's process group is ended on that machine at once. PR_SET_PDEATHSIG covered
the direct child only: a grandchild ran on, and after the lease a clone on another machine took the
remote lock and ran its command beside it."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import Remote, run_michi
from lockkit import await_exit, sentinel_of, wait_until

from michi.lock import procs
from michi.lock.sentinel import Sentinel

pytestmark = pytest.mark.slow

# A grandchild of michi (sh -> sh) in the command's group, ticking (forking a `sleep` each time) until ended.
TICKER = "sh -c 'echo $$ > ticker.pid; while :; do echo tick >> ticks; sleep 0.05; done'; true"


def start_run(cwd: Path, *lock_args: str, new_session: bool = False) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "michi", "lock", "run", *lock_args, "--", "sh", "-c", TICKER],
        cwd=cwd,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=new_session,
    )


@contextlib.contextmanager
def ticking(
    cwd: Path, *lock_args: str, new_session: bool = False
) -> Iterator[tuple[subprocess.Popen[bytes], int]]:
    """A `lock run` of TICKER and its grandchild's PID; the grandchild is killed on the way out should a
    failing test have left it running."""
    holder = start_run(cwd, *lock_args, new_session=new_session)
    try:
        wait_until(lambda: (cwd / "ticks").is_file() and (cwd / "ticker.pid").read_text().strip() != "", 60)
        grandchild = int((cwd / "ticker.pid").read_text())
        yield holder, grandchild
    finally:
        with contextlib.suppress(ProcessLookupError):
            holder.kill()
        holder.wait()
        with contextlib.suppress(NameError, ProcessLookupError):
            os.kill(grandchild, signal.SIGKILL)  # the `sleep` it runs ends by itself


def group_of(pid: int) -> tuple[int, int]:
    found = procs.stat(pid)
    assert found is not None
    ticks = procs.start_ticks(found.pgrp)
    assert ticks is not None
    return found.pgrp, ticks


@pytest.mark.parametrize("where", ["local", "remote"])
@pytest.mark.parametrize("kill", ["michi", "its group"], ids=["michi", "michis-group"])
def test_a_sigkilled_holders_grandchild_is_ended_at_once(
    remote: Remote, local_repo: Path, where: str, kill: str
) -> None:
    """`kill -9 PID`, and `kill -9 -PGID` as `timeout -s KILL` or a job's kill sends it: the sentinel is in
    a session of its own, out of reach of both."""
    cwd, args = (
        (local_repo, ["--ttl", "30"])
        if where == "local"
        else (remote.clone("a"), ["--remote", "--ttl", "30"])
    )
    with ticking(cwd, *args, new_session=kill == "its group") as (holder, grandchild):
        pgid, ticks = group_of(grandchild)
        if kill == "michi":
            holder.kill()
        else:
            os.killpg(holder.pid, signal.SIGKILL)
        holder.wait()
        await_exit(grandchild, timeout=10)  # long before any lease (30 s) could end: no taker did it
        wait_until(lambda: not procs.group_members(pgid, ticks), 10, "the group to be gone")
    if (
        where == "local"
    ):  # a dead holder, nothing left of its group: simply stale, taken without ending anything
        status = run_michi(local_repo, "--json", "lock", "status").json()
        assert status["stale"] and status["reason"] == "dead", status
        after = run_michi(local_repo, "lock", "run", "--wait", "0", "--", "true")
        assert after.exit_code == 0 and "ended what its command left running" not in after.stderr


def test_a_stopped_michi_is_not_dead_but_killed_while_stopped_it_is(local_repo: Path) -> None:
    with ticking(local_repo, "--ttl", "30") as (holder, grandchild):
        os.kill(holder.pid, signal.SIGSTOP)
        ticks = (local_repo / "ticks").read_text().count("tick")
        wait_until(lambda: (local_repo / "ticks").read_text().count("tick") > ticks + 3, 20, "more ticks")
        assert procs.start_ticks(grandchild) is not None  # only michi's death counts
        holder.kill()  # SIGKILL ends a stopped process too
        holder.wait()
        await_exit(grandchild, timeout=10)


def test_the_sentinel_stands_down_when_the_run_ends(local_repo: Path) -> None:
    script = "echo $$ > leader.pid; while [ ! -e done ]; do sleep 0.02; done"
    holder = subprocess.Popen(
        [sys.executable, "-m", "michi", "lock", "run", "--", "sh", "-c", script],
        cwd=local_repo,
        stderr=subprocess.PIPE,
    )
    leader = local_repo / "leader.pid"
    try:
        wait_until(lambda: leader.is_file() and leader.read_text() != "", 60, "the command")
        sentinel = sentinel_of(holder.pid)
        found = procs.stat(sentinel)
        assert found is not None and found.pgrp == sentinel != os.getpgid(holder.pid)
        assert os.getsid(sentinel) == sentinel  # a session of its own
    finally:
        (local_repo / "done").touch()  # the command ends: a failing test leaves nothing running
    _out, err = holder.communicate(timeout=60)
    assert holder.returncode == 0, err
    await_exit(sentinel, timeout=5)


def test_the_sentinel_never_ends_a_group_it_was_not_started_for(tmp_path: Path) -> None:
    """A group number is reused once its group is gone: the sentinel checks the leader's start ticks, and
    ends nothing when they differ. Told michi is gone (`close(over=False)`) with the right ticks, it does."""
    sleeper = subprocess.Popen(["sleep", "300"], start_new_session=True)
    try:
        ticks = procs.start_ticks(sleeper.pid)
        assert ticks is not None
        Sentinel.start(sleeper.pid, ticks + 1).close(over=False)
        assert sleeper.poll() is None
        Sentinel.start(sleeper.pid, ticks).close(over=True)  # the group is over: nothing to do
        assert sleeper.poll() is None
        Sentinel.start(sleeper.pid, ticks).close(over=False)
        assert sleeper.wait(timeout=10) == -signal.SIGKILL
    finally:
        sleeper.kill()
        sleeper.wait()
