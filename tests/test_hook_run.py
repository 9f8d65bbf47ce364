"""`michi hook run` through real `git commit`s: the lock, michi's own commits, stale and corrupt locks,
hand edits of task files (ADR 0005)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import CliResult, git, run_michi
from test_hook_support import Holder, commit, installed

from michi.lock.record import TOKEN_ENV


@pytest.fixture
def hooked(local_repo: Path) -> Path:
    installed(local_repo)
    (local_repo / ".michi.toml").write_text("[michi]\n")  # michi keeps tasks here (untracked is enough)
    return local_repo


def head(repo: Path) -> str:
    return git(repo, "rev-parse", "HEAD")


def test_no_lock_passes_silently(hooked: Path) -> None:
    before = head(hooked)
    proc = commit(hooked)
    assert proc.returncode == 0, proc.stderr
    assert "michi" not in proc.stderr
    assert head(hooked) != before


def test_refused_while_another_process_holds_the_lock(hooked: Path) -> None:
    before = head(hooked)
    with Holder(hooked) as holder:
        proc = commit(hooked)
    assert proc.returncode != 0
    assert head(hooked) == before
    message = proc.stderr
    assert "commit refused: the repo lock is held by another process" in message
    for part in (f"PID {holder.pid}", "agent agent-7", "'task done 42'", "for 0s", "michi lock run --"):
        assert part in message, message
    assert message.count("commit refused") == 1


def test_the_holders_own_commit_passes_with_its_token(hooked: Path) -> None:
    with Holder(hooked) as holder:
        proc = commit(hooked, ".tasks/t1.json", env={TOKEN_ENV: holder.token})
        assert proc.returncode == 0, proc.stderr
        assert proc.stderr == ""


def test_a_wrong_token_is_refused_and_said_so(hooked: Path) -> None:
    with Holder(hooked):
        proc = commit(hooked, env={TOKEN_ENV: "not-the-token"})
    assert proc.returncode != 0
    assert "MICHI_LOCK_TOKEN is set but is not this lock's token" in proc.stderr


def test_dead_holder_warns_and_passes(hooked: Path) -> None:
    holder = Holder(hooked)
    holder.kill()
    holder.stop()
    assert (hooked / ".michi.lock" / "owner.json").is_file()  # left behind, as a crash would
    proc = commit(hooked)
    assert proc.returncode == 0, proc.stderr
    assert "michi: warning: ignoring a stale repo lock" in proc.stderr
    assert f"PID {holder.pid}" in proc.stderr and "its process is gone" in proc.stderr


def test_expired_lease_warns_and_passes_though_the_holder_lives(hooked: Path) -> None:
    with Holder(hooked, ttl=-60) as holder:
        assert holder.proc.poll() is None
        proc = commit(hooked)
    assert proc.returncode == 0, proc.stderr
    assert "its lease expired" in proc.stderr


def test_corrupt_record_blocks_and_says_how_to_clear_it(hooked: Path) -> None:
    (hooked / ".michi.lock").mkdir()
    (hooked / ".michi.lock" / "owner.json").write_text('{"pid": 12, "tok')
    proc = commit(hooked)
    assert proc.returncode != 0
    assert "commit refused: the repo lock is unreadable (owner record is not valid JSON" in proc.stderr
    for part in ("michi lock status", "michi lock release --force --yes", ".michi.lock/"):
        assert part in proc.stderr


@pytest.mark.parametrize("kind", ["file", "symlink"])
def test_a_lock_path_that_is_not_a_folder_blocks(hooked: Path, tmp_path: Path, kind: str) -> None:
    if kind == "file":
        (hooked / ".michi.lock").write_text("?")
    else:
        (tmp_path / "elsewhere").mkdir()
        (hooked / ".michi.lock").symlink_to(tmp_path / "elsewhere")
    proc = commit(hooked)
    assert proc.returncode != 0
    assert f"is a {kind}, not a folder" in proc.stderr
    # The hint is one that works: michi's lock commands refuse to remove what is not a folder of theirs.
    assert "lock release --force" not in proc.stderr and "rm .michi.lock" in proc.stderr, proc.stderr
    assert run_michi(hooked, "lock", "release", "--force", "--yes").exit_code == 2


def test_a_lock_being_taken_right_now_blocks(hooked: Path) -> None:
    (hooked / ".michi.lock").mkdir()  # mkdir done, record not published yet: a holder mid-acquire
    proc = commit(hooked)
    assert proc.returncode != 0
    assert "a process that is taking it right now" in proc.stderr


def test_a_lock_folder_without_record_for_long_is_stale(hooked: Path) -> None:
    (hooked / ".michi.lock").mkdir()
    os.utime(hooked / ".michi.lock", (1, 1))  # older than the grace for publishing a record
    proc = commit(hooked)
    assert proc.returncode == 0, proc.stderr
    assert "it has no owner record" in proc.stderr


@pytest.mark.parametrize(
    "path",
    [
        ".tasks/a1.json",
        "domains/billing/.tasks/b2.json",
        ".tasks/a1/a1b2.json",
        "domains/x/.tasks/0f/0f1.json",
    ],
)
def test_hand_edited_task_file_refused(hooked: Path, path: str) -> None:
    before = head(hooked)
    proc = commit(hooked, path)
    assert proc.returncode != 0
    assert head(hooked) == before
    assert f"commit refused: it changes task files by hand ({path})" in proc.stderr
    assert "allow_hand_edits" in proc.stderr


def test_hand_edit_through_commit_all_and_deletion_refused(hooked: Path) -> None:
    (hooked / ".tasks").mkdir()
    (hooked / ".tasks" / "c3.json").write_text("{}\n")
    git(hooked, "add", ".tasks")
    git(hooked, "commit", "-q", "--no-verify", "-m", "seed a task file")
    (hooked / ".tasks" / "c3.json").write_text('{"status": "done"}\n')
    proc = commit(hooked, args=("-a",))  # git commit -a: the hook sees a temporary index
    assert proc.returncode != 0 and ".tasks/c3.json" in proc.stderr
    git(hooked, "checkout", "--", ".tasks")
    git(hooked, "rm", "-q", ".tasks/c3.json")
    proc = commit(hooked)
    assert proc.returncode != 0 and ".tasks/c3.json" in proc.stderr


def test_other_files_in_a_tasks_folder_are_not_task_files(hooked: Path) -> None:
    proc = commit(hooked, ".tasks/README.md")
    assert proc.returncode == 0, proc.stderr


def test_hand_edits_allowed_by_config_or_environment(hooked: Path) -> None:
    (hooked / ".michi.toml").write_text("allow_hand_edits = true\n")
    assert commit(hooked, ".tasks/d4.json").returncode == 0
    (hooked / ".michi.toml").write_text("[michi]\n")  # the default: no hand edits
    assert commit(hooked, ".tasks/d4.json").returncode != 0
    proc = commit(hooked, ".tasks/d4.json", env={"MICHI_ALLOW_HAND_EDITS": "1"})
    assert proc.returncode == 0, proc.stderr


def test_a_bad_config_is_named(hooked: Path) -> None:
    (hooked / ".michi.toml").write_text("allow_hand_edits = 'perhaps'\n")
    proc = commit(hooked, ".tasks/e5.json")
    assert proc.returncode != 0
    assert ".michi.toml" in proc.stderr and "allow_hand_edits" in proc.stderr


def test_cli_run_reports_json(cli: Callable[..., CliResult], local_repo: Path) -> None:
    with Holder(local_repo):
        result = cli(local_repo, "--json", "hook", "run")
    assert result.exit_code == 75
    error = result.json()["error"]
    assert error["code"] == "lock_busy" and error["holder"]["agent"] == "agent-7"
    assert "token" not in error["holder"]  # the token is the pass through the hook: never shown
    result = cli(local_repo, "--json", "hook", "run")
    assert result.exit_code == 0 and result.json()["allowed"] is True  # the killed holder left a stale lock
    assert "its process is gone" in result.json()["warnings"][0]


def test_commits_through_michi_lock_run(hooked: Path) -> None:
    """The real lock (ADR 0003): its `lock run` children commit, even task files; others are refused."""
    under_lock = ["git", "commit", "-q", "-m", "under the lock"]
    (hooked / ".tasks").mkdir()
    (hooked / ".tasks" / "g7.json").write_text("{}\n")
    git(hooked, "add", ".tasks")
    ran = run_michi(hooked, "lock", "run", "--wait", "0", "--", *under_lock)
    assert ran.exit_code == 0, ran.stderr
    assert git(hooked, "log", "-1", "--format=%s") == "under the lock"

    waiter = "print('ready', flush=True); import sys; sys.stdin.read()"
    holder = subprocess.Popen(
        [sys.executable, "-m", "michi", "lock", "run", "--", sys.executable, "-c", waiter],
        cwd=hooked,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "ready"
        refused = commit(hooked)
        assert refused.returncode != 0 and f"PID {holder.pid}" in refused.stderr
        assert "lock run" in refused.stderr
    finally:
        assert holder.stdin is not None
        holder.stdin.close()
        assert holder.wait(timeout=30) == 0
        assert holder.stdout is not None
        holder.stdout.close()
    proc = commit(hooked)  # released on exit: nothing left behind, not even a warning
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr


def test_another_tools_tasks_folder_is_not_refused_where_michi_keeps_no_tasks(local_repo: Path) -> None:
    """A hook installed for every repository (a global `core.hooksPath`) runs in repositories michi never
    touched: a `.tasks/` folder there is another tool's, and its commits go through."""
    installed(local_repo)
    before = head(local_repo)
    proc = commit(local_repo, ".tasks/a1/a1b2.json")
    assert proc.returncode == 0, proc.stderr
    assert head(local_repo) != before
    (local_repo / ".michi").mkdir()  # michi's own folder: michi keeps tasks here after all
    proc = commit(local_repo, ".tasks/a1/a1b3.json")
    assert proc.returncode != 0 and "commit refused" in proc.stderr
