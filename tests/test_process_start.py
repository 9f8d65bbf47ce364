"""The lock's record of its holder's start time, read from /proc on Linux (ADR 0010), must equal what
psutil says: records written by either are compared with a 0.05 s tolerance to tell a PID reused."""

from __future__ import annotations

import os
import subprocess
import sys

import psutil
import pytest

from michi.lock.record import process_start

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc is Linux's")


def test_start_times_match_psutil() -> None:
    for pid in (os.getpid(), os.getppid(), 1):
        assert process_start(pid) == pytest.approx(psutil.Process(pid).create_time(), abs=0.01)


def test_zombies_and_missing_processes_have_no_start() -> None:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    os.waitid(os.P_PID, child.pid, os.WEXITED | os.WNOWAIT)  # it exited; not reaped: a zombie
    assert process_start(child.pid) is None
    child.wait()
    assert process_start(child.pid) is None
