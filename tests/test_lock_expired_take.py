"""A taker ends what a stale holder's command left running only once its take is decided, under the
lock's guard (ADR 0003): a taker that then cannot get the guard (its holder stopped inside it, renewing
its lease) gives up without having cut the holder's work."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest
from conftest import run_michi
from lockkit import (
    TICKER,
    sentinel_of,
    start_lock_run,
    stop_in_guard,
    ticker_pid,
    wait_until,
)

from michi.lock.procs import start_ticks, stat
from michi.lock.repolock import peek

pytestmark = pytest.mark.slow

CASES = {
    # A's michi paused (SIGSTOP) past its lease: its lock is stale, its command runs on.
    "paused holder, lock run": ("expired", ["lock", "run", "--wait", "1", "--", "true"]),
    # A's michi and its sentinel killed: its command runs on in its group, the lock held for it.
    "dead holder, lock run": ("orphans", ["lock", "run", "--wait", "1", "--", "true"]),
    "dead holder, release --force": ("orphans", ["lock", "release", "--force"]),
}


@pytest.mark.parametrize("case", list(CASES))
def test_a_taker_that_cannot_get_the_guard_leaves_the_holders_command_alone(
    local_repo: Path, case: str
) -> None:
    """Before, the taker ended A's command as soon as it judged A's hold stale, before it had the guard,
    then gave up (exit 75) and had cut A's work for nothing."""
    reason, taker = CASES[case]
    holder = start_lock_run(local_repo, TICKER, MICHI_LOCK_TTL="1")
    guard = None
    try:
        grandchild = ticker_pid(local_repo)
        if reason == "expired":
            os.kill(holder.pid, signal.SIGSTOP)
        else:
            os.kill(sentinel_of(holder.pid), signal.SIGKILL)
            holder.kill()
            holder.wait()
        lock_dir = local_repo / ".michi.lock"
        wait_until(lambda: peek(lock_dir)[1].reason == reason, 20, f"the lock to be {reason}")
        guard = stop_in_guard(local_repo / ".git" / "michi")

        refused = run_michi(local_repo, *taker)
        assert refused.exit_code == 75, refused.stderr
        assert f"PID {guard.pid}, which is stopped" in refused.stderr
        assert start_ticks(grandchild) is not None  # A's command runs on, untouched
        assert peek(lock_dir)[1].reason == reason  # and its lock is still there

        guard.kill()
        guard.wait()
        taken = run_michi(local_repo, "lock", "run", "--wait", "30", "--", "true")
        assert taken.exit_code == 0, taken.stderr
        assert "ended what its command left running" in taken.stderr  # the take that is decided ends it
        assert start_ticks(grandchild) is None
    finally:
        if guard is not None and guard.poll() is None:
            guard.kill()
            guard.wait()
        if holder.poll() is None:
            os.kill(holder.pid, signal.SIGCONT)
    if reason == "expired":
        assert holder.wait(60) == 75  # resumed, A learns its lock was taken


def test_a_holder_stopped_in_its_renewal_keeps_its_command(local_repo: Path) -> None:
    """The reviewers' run: A's michi stopped inside the guard while it renewed its lease (here at the
    `renewing` fault point), and its lease ran out. B judged A's hold stale, ended A's command, then could
    not get the guard and gave up (exit 75). Now B gives up leaving A's command alone, and A, resumed,
    renews its lease and goes on."""
    # A lease of 6 s: the first renewal comes 2 s in, well after the command started ticking.
    holder = start_lock_run(local_repo, TICKER, MICHI_LOCK_TTL="6", MICHI_FAULT="renewing:SIGSTOP")
    lock_dir = local_repo / ".michi.lock"
    try:
        grandchild = ticker_pid(local_repo)
        wait_until(lambda: getattr(stat(holder.pid), "state", "") == "T", 20, "A to stop renewing")
        wait_until(lambda: peek(lock_dir)[1].reason == "expired", 20, "A's lease to run out")

        refused = run_michi(local_repo, "lock", "run", "--wait", "1", "--", "true")
        assert refused.exit_code == 75, refused.stderr
        assert f"PID {holder.pid}, which is stopped" in refused.stderr  # A holds the guard
        assert start_ticks(grandchild) is not None
    finally:
        os.kill(holder.pid, signal.SIGCONT)
    wait_until(lambda: peek(lock_dir)[1].reason == "live", 20, "A's renewal")
    owner = peek(lock_dir)[0]
    assert owner is not None and owner.pid == holder.pid
    assert start_ticks(grandchild) is not None
    holder.send_signal(signal.SIGTERM)
    assert holder.wait(60) == 130
