"""The real Taskwarrior for compatibility tests: `task` with a data folder of its own, never the user's."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

TASK = shutil.which("task")


def taskwarrior(tmp_path: Path) -> Callable[..., str]:
    """A `task ARGS...` runner with its own data and rc under `tmp_path` (stdout back; a failure fails the
    test). Without the binary the test is skipped, or fails where CI demands it
    (MICHI_REQUIRE_TASKWARRIOR)."""
    if TASK is None:
        if os.environ.get("MICHI_REQUIRE_TASKWARRIOR") == "1":
            pytest.fail("Taskwarrior's 'task' binary is required (MICHI_REQUIRE_TASKWARRIOR=1)")
        pytest.skip("Taskwarrior's 'task' binary is not installed")
    data = tmp_path / "twdata"
    data.mkdir()
    rc = tmp_path / "taskrc"
    rc.write_text(f"data.location={data}\nconfirmation=off\njson.array=on\nverbose=nothing\nhooks=off\n")
    env = {**os.environ, "TASKDATA": str(data), "TASKRC": str(rc)}
    task = TASK

    def run(*args: str) -> str:
        proc = subprocess.run([task, *args], capture_output=True, text=True, env=env, timeout=60)
        assert proc.returncode == 0, proc.stderr
        return proc.stdout

    return run
