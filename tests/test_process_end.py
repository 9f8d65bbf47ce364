"""How a `michi` process that ran its command itself ends (`michi.serve.client.finish`): its exit handlers
run and its output is flushed, then `os._exit` skips the interpreter's teardown (freeing every object and
module: ~13 ms of every command), unless a thread that is not a daemon still runs, which the teardown
would wait for, or a profiler, tracer or debugger still has to report."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

_PROBE = """
import atexit, os, sys, threading

class Freed:
    def __del__(self):
        sys.stderr.write("teardown\\n")

kept = Freed()  # freed by the interpreter's teardown only
atexit.register(lambda: sys.stderr.write("exit handler\\n"))
read, write = os.pipe()
if sys.argv[1] == "thread":
    threading.Thread(target=os.read, args=(read, 1)).start()  # not a daemon: runs until written to
sys.argv = ["michi", "--json", "--version"]
from michi.serve.client import main

code = main()
sys.stderr.write("returned\\n")
os.write(write, b"x")
raise SystemExit(code)
"""


@pytest.mark.parametrize("running", ["none", "thread"])
def test_a_command_run_here_ends_without_the_teardown_unless_a_thread_must_end_first(running: str) -> None:
    root = str(Path(__file__).resolve().parent.parent)
    proc = subprocess.run(
        [sys.executable, "-c", _PROBE, running],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": root, "MICHI_SERVER": "off"},
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith('{"version": '), proc.stdout  # flushed before the end
    assert "exit handler" in proc.stderr
    if running == "none":
        assert "returned" not in proc.stderr and "teardown" not in proc.stderr
    else:  # the thread is joined by the interpreter's end, as without michi's
        assert "returned" in proc.stderr and "teardown" in proc.stderr


def _michi(*args: str, stdout: int | None = subprocess.PIPE) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}  # output flushed at the end
    env.update(PYTHONPATH=str(Path(__file__).resolve().parent.parent), MICHI_SERVER="off")
    return subprocess.run(
        [sys.executable, *args], stdout=stdout, stderr=subprocess.PIPE, text=True, timeout=60, env=env
    )


def test_output_lost_at_the_end_is_said_and_the_exit_code_is_the_commands() -> None:
    """`--version` leaves its line to the last flush: a full disk there (or a reader gone) is said on
    stderr, as for every command's output (`render`), and the exit code stays the command's."""
    full = os.open("/dev/full", os.O_WRONLY)
    try:
        proc = _michi("-m", "michi", "--json", "--version", stdout=full)
    finally:
        os.close(full)
    assert proc.returncode == 0, proc.stderr
    assert "michi: the output could not be written" in proc.stderr
    assert "Traceback" not in proc.stderr and "Exception ignored" not in proc.stderr


def test_a_profiler_still_reports_once_michi_returned(tmp_path: Path) -> None:
    profile = tmp_path / "michi.prof"
    proc = _michi("-m", "cProfile", "-o", str(profile), "-m", "michi", "--json", "--version")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith('{"version": ')
    assert profile.stat().st_size > 0


_WORKER_PROBE = """
import atexit, os, sys
from michi.serve import worker

atexit.register(lambda: sys.stderr.write("exit handler\\n"))
code = worker._main(["--json", "--version"])
sys.stderr.write("answered %d\\n" % code)
os._exit(code)  # as the worker ends (`standby`)
"""


def test_a_served_command_runs_its_exit_handlers_before_it_answers() -> None:
    """A served command's worker ends by `os._exit` too: its exit handlers (the cache writer waited for,
    what the lock's hold put off) run before it sends the exit code, by the same `client.wind_up` as a
    command run here."""
    proc = _michi("-c", _WORKER_PROBE)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith('{"version": '), proc.stdout
    assert proc.stderr.splitlines()[-2:] == ["exit handler", "answered 0"], proc.stderr
