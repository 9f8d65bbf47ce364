"""The waiters' queue folder (`.git/michi/lock-queue`, ADR 0003) is never followed or misread: a file,
FIFO or symlink in its place is `lock_path_invalid` (exit 2) naming it, as for the guard and the baton."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from conftest import run_michi

SPOILERS = ["file", "fifo", "symlink"]


def spoil(queue: Path, how: str, outside: Path) -> None:
    queue.parent.mkdir(parents=True, exist_ok=True)
    if how == "file":
        queue.write_text("x\n")
    elif how == "fifo":
        os.mkfifo(queue)
    else:
        outside.mkdir()
        queue.symlink_to(outside)


@pytest.mark.parametrize("how", SPOILERS)
def test_a_spoilt_queue_folder_is_named_never_followed(local_repo: Path, tmp_path: Path, how: str) -> None:
    queue = local_repo / ".git" / "michi" / "lock-queue"
    outside = tmp_path / "elsewhere"
    spoil(queue, how, outside)
    for args in (["lock", "status"], ["lock", "run", "--wait", "1", "--", "true"]):
        result = run_michi(local_repo, "--json", *args, timeout=30)
        assert result.exit_code == 2, (args, result.stdout, result.stderr)
        error = result.json()["error"]
        assert error["code"] == "lock_path_invalid" and str(queue) in error["message"]
        assert "rm -r" in error["hint"]
    assert not outside.exists() or list(outside.iterdir()) == []  # no ticket written through the link
    assert not (local_repo / ".michi.lock").exists()
    os.unlink(queue)  # the fix the hint gives
    assert run_michi(local_repo, "lock", "run", "--wait", "1", "--", "true").exit_code == 0


def test_a_waiter_behind_a_holder_never_queues_through_a_link(local_repo: Path, tmp_path: Path) -> None:
    token = run_michi(local_repo, "lock", "acquire", "--pid", str(os.getpid())).stdout.strip()
    queue = local_repo / ".git" / "michi" / "lock-queue"
    if queue.exists():
        os.rmdir(queue)
    outside = tmp_path / "elsewhere"
    spoil(queue, "symlink", outside)
    waiter = run_michi(local_repo, "--json", "lock", "run", "--wait", "1", "--", "true", timeout=30)
    assert waiter.exit_code == 2 and waiter.json()["error"]["code"] == "lock_path_invalid"
    assert list(outside.iterdir()) == []
    assert run_michi(local_repo, "lock", "release", "--token", token).exit_code == 0
