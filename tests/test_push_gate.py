"""The gate a push waits at until the journal names it (ADR 0004): `plain.run_ended(named=)`.

A push outlives the michi that started it, so the next holder must find it by the pid the journal
records. The process is started held at a gate, `named(pid)` writes the pid down, and only then may git
run, under that very pid: a michi that dies (or fails to write) in between leaves nothing running."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import psutil
import pytest
from lockkit import wait_until

from michi.git import plain
from michi.lock.record import process_start


class Unwritable(Exception):
    pass


def _run(argv: list[str], tmp_path: Path, **kw: object) -> tuple[int, bytes, bytes]:
    return plain.run_ended(argv, cwd=tmp_path, env=dict(os.environ), timeout=30.0, **kw)  # type: ignore[arg-type]


def test_the_command_runs_under_the_pid_named_and_keeps_its_input_and_output(tmp_path: Path) -> None:
    seen: dict[str, tuple[int, float | None]] = {}

    def named(pid: int) -> None:
        assert not (tmp_path / "ran").exists()  # held at the gate while it is being named
        seen["named"] = (pid, process_start(pid))

    def beside(pid: int, status: Callable[[], int | None]) -> None:
        seen["beside"] = (pid, process_start(pid))
        assert status() is None  # still running: its input is written only after this returns

    script = "touch ran; echo $$; cat; echo oops >&2; exit 3"
    status, out, err = _run(
        ["sh", "-c", script], tmp_path, data=b"line one\n", named=named, on_start=beside, outlives_us=True
    )
    pid = seen["named"][0]
    assert (status, out, err) == (3, f"{pid}\nline one\n".encode(), b"oops\n")  # the gate exec'd it
    assert seen["named"] == seen["beside"] and seen["named"][1] is not None  # one pid, one start time


def test_a_gate_ended_before_it_opened_runs_nothing_and_says_so(tmp_path: Path) -> None:
    """A paused holder's gate ended by the holder that took over (`orphans.settle`): no git ever ran."""

    def named(pid: int) -> None:
        os.killpg(pid, signal.SIGKILL)
        psutil.Process(pid).wait(timeout=30)

    with pytest.raises(plain.NeverStarted):
        _run(["sh", "-c", "touch ran"], tmp_path, named=named, outlives_us=True)
    assert not (tmp_path / "ran").exists()


def test_a_failed_naming_runs_nothing_and_says_why(tmp_path: Path) -> None:
    def named(_pid: int) -> None:
        raise Unwritable("disk full")

    with pytest.raises(Unwritable):
        _run(["sh", "-c", "touch ran"], tmp_path, named=named, outlives_us=True)
    assert not (tmp_path / "ran").exists()


def test_a_caller_killed_before_it_named_the_process_leaves_nothing_running(tmp_path: Path) -> None:
    caller = """
import os, signal
from michi.git import plain

def named(pid):
    open("gate.pid", "w").write(str(pid))
    os.kill(os.getpid(), signal.SIGKILL)

plain.run_ended(["sh", "-c", "touch ran"], cwd=".", env=dict(os.environ), timeout=30, named=named,
                outlives_us=True)
"""
    proc = subprocess.run([sys.executable, "-c", caller], cwd=tmp_path, timeout=60)
    assert proc.returncode == -9
    gate = int((tmp_path / "gate.pid").read_text())
    # The gate read end of file: its shell exits without running the command.
    wait_until(lambda: not _running(gate), timeout=30, what="the gate's shell to end")
    assert not (tmp_path / "ran").exists()


def _running(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False
