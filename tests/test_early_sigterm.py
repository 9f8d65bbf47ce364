"""SIGTERM or SIGHUP that comes once a changing command's transaction started and before it takes the repo
lock ends it as Ctrl-C does (ADR 0004): exit 130, `terminated`, its `--json` answer, nothing done. It
killed michi outright there: exit 143, which README's table of exit codes does not name, and no answer
at all, where the same signal while the lock is awaited gave 130 and `terminated`."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import Remote, run_michi
from txnkit import michi_commits


@pytest.mark.parametrize("sent", ["SIGTERM", "SIGHUP"])
def test_a_signal_before_the_lock_ends_the_command_as_ctrl_c_does(
    remote: Remote, repo: Path, sent: str
) -> None:
    assert run_michi(repo, "init").exit_code == 0
    before = remote.head()
    fault = {"MICHI_FAULT": f"prebuilt:{sent}"}  # its commit built, its lock not yet taken
    added = run_michi(repo, "--json", "task", "add", "X", env=fault)
    assert added.exit_code == 130, added
    error = added.json()["error"]
    assert error["code"] == "terminated" and sent in error["message"], error
    human = run_michi(repo, "task", "add", "X", env=fault)
    assert human.exit_code == 130 and f"terminated by {sent}" in human.stderr, human
    assert remote.head() == before  # nothing landed, nothing left to finish
    assert not (repo / ".git/michi/journal.json").exists()
    assert not (repo / ".michi.lock").exists()
    assert [t["description"] for t in run_michi(repo, "--json", "task", "list", "--fetch").json()] == []


def test_a_hangup_michi_was_told_to_ignore_stays_ignored(remote: Remote, repo: Path) -> None:
    """`nohup michi ...`: SIGHUP ignored by whoever started michi is not michi's to handle; the same
    hang-up where its handling is the default ends the command (130)."""
    assert run_michi(repo, "init").exit_code == 0
    before = len(michi_commits(remote.bare))
    hangup = {**os.environ, "MICHI_FAULT": "prebuilt:SIGHUP"}
    ignored = subprocess.run(
        [sys.executable, "-m", "michi", "--json", "task", "add", "Y"],
        cwd=repo,
        capture_output=True,
        text=True,
        env=hangup,
        preexec_fn=lambda: signal.signal(signal.SIGHUP, signal.SIG_IGN),
        timeout=60,
    )
    assert ignored.returncode == 0, (ignored.stdout, ignored.stderr)
    assert len(michi_commits(remote.bare)) == before + 1
    hung = run_michi(repo, "--json", "task", "add", "Z", env={"MICHI_FAULT": "prebuilt:SIGHUP"})
    assert hung.exit_code == 130 and hung.json()["error"]["code"] == "terminated", hung
    assert len(michi_commits(remote.bare)) == before + 1
