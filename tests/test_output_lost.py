"""Output that cannot be written (the reader went away: `| head`, EPIPE; a full disk: ENOSPC) once made a
change that had landed end in a traceback and exit 1, so an agent repeated it. The output is dropped with
a note on stderr, and the exit code is the command's."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import git


@pytest.fixture
def ready(cli, repo: Path) -> Path:
    assert cli(repo, "init").exit_code == 0
    return repo


def _closed_pipe() -> int:
    """The write end of a pipe nobody reads: a write gets EPIPE."""
    read, write = os.pipe()
    os.close(read)
    return write


@pytest.mark.parametrize("sink", ["full_disk", "reader_gone"])
@pytest.mark.parametrize("json_mode", [True, False], ids=["json", "people"])
def test_a_change_whose_output_is_lost_still_exits_0_and_lands_once(
    ready: Path, remote, sink: str, json_mode: bool
) -> None:
    out = os.open("/dev/full", os.O_WRONLY) if sink == "full_disk" else _closed_pipe()
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "michi", *(["--json"] if json_mode else []), "task", "add", "landed"],
            cwd=ready,
            stdout=out,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
        )
    finally:
        os.close(out)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    assert "the output could not be written" in proc.stderr
    files = git(remote.bare, "ls-tree", "-r", "--name-only", "main").split()
    assert len([f for f in files if f.endswith(".json")]) == 1
