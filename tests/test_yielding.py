"""The low CPU priority of remote git work that no lock waits for (ADR 0004): `plain.run_ended(yielding=)`.
Linux refuses a change of an autogroup's nice within 100 ms of the last one on the machine to anyone
without CAP_SYS_ADMIN; these tests stand in for that refusal (the suite may run as root, which is never
refused) and check the retry's logic on real processes. The priorities themselves are checked end to end
by `test_txn.py::test_a_fetch_no_lock_waits_for_yields_the_cpu_and_the_push_does_not`."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import psutil
import pytest

from michi.git import plain


@pytest.fixture
def tries(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The group's priority is refused the first time, set the second."""
    seen: list[int] = []

    def refused_once(leader: int) -> bool:
        seen.append(leader)
        return len(seen) > 1

    monkeypatch.setattr(plain, "_yield_cpu", refused_once)
    return seen


def _run(script: str, tmp_path: Path, timeout: float | None) -> tuple[int, bytes, bytes]:
    return plain.run_ended(
        ["sh", "-c", script], cwd=tmp_path, env=dict(os.environ), timeout=timeout, yielding=True
    )


@pytest.mark.parametrize("timeout", [None, 30.0])
def test_a_refused_group_priority_is_tried_again_and_nothing_of_the_output_is_lost(
    tries: list[int], tmp_path: Path, timeout: float | None
) -> None:
    # The work outlasts the kernel's interval (its output comes before and after it).
    status, out, err = _run("echo before; sleep 0.5; echo after; echo oops >&2; exit 3", tmp_path, timeout)
    assert (status, out, err) == (3, b"before\nafter\n", b"oops\n")
    assert len(tries) == 2 and tries[0] == tries[1]


def test_work_that_ends_within_the_interval_is_not_tried_again(tries: list[int], tmp_path: Path) -> None:
    assert _run("echo quick", tmp_path, 30.0) == (0, b"quick\n", b"")
    assert len(tries) == 1


def test_the_retry_keeps_the_time_limit_and_ends_the_whole_session(tries: list[int], tmp_path: Path) -> None:
    child = tmp_path / "child.pid"
    started = time.monotonic()
    with pytest.raises(subprocess.TimeoutExpired):
        _run(f"sleep 30 & echo $! > {child}; wait", tmp_path, 0.4)
    assert time.monotonic() - started < 10
    assert len(tries) == 2
    # What it started went with it (SIGKILL to the session's group): no sleep left running. Not our
    # child, so there is nothing to wait on; its state is read until it is dead (bounded).
    sleeper = psutil.Process(int(child.read_text()))
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            if sleeper.status() in (psutil.STATUS_ZOMBIE, psutil.STATUS_DEAD):
                break
        except psutil.NoSuchProcess:
            break
        time.sleep(0.01)
    else:
        pytest.fail("the sleep the command started is still running")
