"""Edges of the command line: a stop signal before any transaction, `lock run`'s 126, seconds echoed as
given, `init` over a `.tasks` that is no folder, a layout marker that is a symlink, a damaged sync marker."""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import Remote, git, spawn_michi

FAKE_SSH = """#!/bin/sh
echo $$ > "$H3_PID"
echo ready > "$H3_FIFO"
exec sleep 60 </dev/null >/dev/null 2>&1
"""


@contextlib.contextmanager
def _fetch_held(tmp_path: Path, repo: Path) -> Iterator[tuple[dict[str, str], int]]:
    """A remote whose fetch says when it started (the read is in its own code, waiting for git) and then
    never answers: the environment to run michi with, and the read end of what says it."""
    fifo, pid, ssh = tmp_path / "ready", tmp_path / "ssh.pid", tmp_path / "fake-ssh"
    os.mkfifo(fifo)
    ssh.write_text(FAKE_SSH)
    ssh.chmod(0o755)
    git(repo, "remote", "add", "far", "ssh://example.invalid/tasks.git")
    env = {
        "GIT_SSH_COMMAND": str(ssh),
        "H3_FIFO": str(fifo),
        "H3_PID": str(pid),
        "MICHI_REMOTE": "far",
        "MICHI_BRANCH": "main",
    }
    ready = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    try:
        yield env, ready
    finally:
        os.close(ready)
        with contextlib.suppress(FileNotFoundError, ValueError, ProcessLookupError):
            os.kill(int(pid.read_text()), signal.SIGKILL)


@pytest.mark.parametrize("sent", ["SIGTERM", "SIGHUP"])
def test_a_stop_signal_before_any_transaction_ends_michi_as_ctrl_c_does(
    tmp_path: Path, repo: Path, sent: str
) -> None:
    """SIGTERM or SIGHUP in a command's own reads (here a read's fetch, well before any transaction)
    killed michi by the default action: exit 143 or 129, no `--json` answer; a moment later, in a
    transaction, the same signal gave 130 `terminated` (README's exit codes, ADR 0004)."""
    with _fetch_held(tmp_path, repo) as (env, ready):
        proc = spawn_michi(repo, "--json", "task", "list", "--fetch", env=env)
        try:
            readable, _, _ = select.select([ready], [], [], 60)
            assert readable, "michi never started its fetch"
            proc.send_signal(getattr(signal, sent))
            out, err = proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
    assert proc.returncode == 130, (proc.returncode, out, err)
    error = json.loads(out)["error"]
    assert error["code"] == "terminated" and error["message"] == f"terminated by {sent}", error


def test_lock_run_of_a_file_on_path_that_cannot_execute_exits_126(tmp_path: Path, local_repo: Path) -> None:
    """Found but not executable is 126, as a shell's (bash, POSIX) and the README's; only a command found
    nowhere is 127. One on PATH said 127, "command not found"."""
    folder = tmp_path / "bin"
    folder.mkdir()
    (folder / "not-executable").write_text("#!/bin/sh\nexit 0\n")
    (local_repo / "not-executable").write_text("#!/bin/sh\nexit 0\n")
    env = {**os.environ, "PATH": f"{folder}{os.pathsep}{os.environ['PATH']}"}

    def run(command: str) -> tuple[int, dict[str, object]]:
        proc = subprocess.run(
            [sys.executable, "-m", "michi", "--json", "lock", "run", "--", command],
            cwd=local_repo,
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
        )
        return proc.returncode, json.loads(proc.stdout)["error"]

    for command in ("not-executable", "./not-executable"):
        code, error = run(command)
        assert code == 126 and error["returncode"] == 126, (command, error)
        assert "Permission denied" in str(error["message"]), error
    code, error = run("not-anywhere")
    assert code == 127 and "not found" in str(error["message"]), error


def test_seconds_are_echoed_as_given(cli, repo: Path) -> None:
    """`--ttl 999999999999` was said back as `1e+12` (`:g`), in messages and in `--json` errors."""
    assert cli(repo, "init").exit_code == 0
    assert cli(repo, "task", "add", "x").exit_code == 0
    claimed = cli(repo, "--json", "task", "claim", "1", "--ttl", "999999999999", "--agent", "a")
    assert claimed.exit_code == 2
    assert claimed.json()["error"]["message"] == "--ttl 999999999999 is more than ten years"
    for args in (("lock", "acquire", "--ttl"), ("task", "add", "y", "--wait")):
        said = cli(repo, *args, "999999999999")
        assert said.exit_code == 2 and "999999999999 is" in said.stderr and "e+" not in said.stderr, said
    from michi.durations import as_given

    assert [as_given(v) for v in (2.5, 316224000.0, 0.1, 2.0**60, float("inf"))] == [
        "2.5",
        "316224000",
        "0.1",
        "1.152921504606847e+18",
        "inf",
    ]


def _entry(repo: Path, mode: str, path: str, content: bytes | None = None) -> None:
    """Commit `path` with `mode` (a file, symlink or submodule) straight into the index, and push."""
    if content is None:
        oid = git(repo, "rev-parse", "HEAD")
    else:
        oid = (
            subprocess.run(
                ["git", "hash-object", "-w", "--stdin"],
                cwd=repo,
                input=content,
                capture_output=True,
                check=True,
            )
            .stdout.decode()
            .strip()
        )
    git(repo, "update-index", "--add", "--cacheinfo", f"{mode},{oid},{path}")
    git(repo, "commit", "-qm", f"{path} as {mode}")
    git(repo, "push", "-q", "origin", "main")


@pytest.mark.parametrize("mode", ["100644", "120000", "160000"])
def test_init_over_a_tasks_that_is_no_folder_is_bad_domain(
    cli, remote: Remote, repo: Path, mode: str
) -> None:
    """`.tasks` a file, symlink or submodule on the task branch: `init` said `not_michis_path` (exit 4)
    where `task add` says `bad_domain` (exit 2) of the same thing, as the README documents."""
    _entry(repo, mode, ".tasks", None if mode == "160000" else b"README.md")
    before = remote.head()
    init = cli(repo, "--json", "init")
    assert init.exit_code == 2, init
    error = init.json()["error"]
    assert error["code"] == "bad_domain" and error["path"] == ".tasks", error
    added = cli(repo, "--json", "task", "add", "x")
    assert added.exit_code == 2 and added.json()["error"]["code"] == "bad_domain", added
    assert remote.head() == before


def test_init_refuses_a_symlink_named_tasks_in_the_work_tree(cli, repo: Path) -> None:
    (repo / ".tasks").symlink_to(repo.parent)
    init = cli(repo, "--json", "init")
    assert init.exit_code == 2 and init.json()["error"]["code"] == "bad_domain", init


def test_a_layout_marker_committed_as_a_symlink_is_said_to_be_one(cli, repo: Path) -> None:
    """It read as a layout named after the link's target, "newer than this michi: upgrade michi"."""
    assert cli(repo, "init").exit_code == 0
    git(repo, "pull", "-q")
    git(repo, "rm", "-q", ".michi/layout")
    git(repo, "commit", "-qm", "no marker")
    _entry(repo, "120000", ".michi/layout", b"../README.md")
    listed = cli(repo, "--json", "task", "list", "--fetch")
    assert listed.exit_code == 2, listed
    error = listed.json()["error"]
    assert "symlink" in error["message"] and "newer" not in error["message"], error
    assert "git rm .michi/layout" in error["hint"] and "upgrade" not in error["hint"], error


def test_a_folder_where_the_sync_marker_belongs_does_not_make_every_read_fetch(cli, repo: Path) -> None:
    """`.git/michi/synced` a folder: each read took the last sync as never, fetched, and could not touch
    the marker, for ever. It is set aside (what it holds kept) and the marker made."""
    assert cli(repo, "init").exit_code == 0
    state = repo / ".git" / "michi"
    marker = state / "synced"
    marker.unlink()
    marker.mkdir()
    (marker / "kept").write_text("mine")
    first = cli(repo, "task", "list")
    assert "fetched just now" in first.stderr, first
    assert stat.S_ISREG(os.lstat(marker).st_mode)
    [aside] = [p for p in state.iterdir() if p.name.startswith("synced.")]
    assert (aside / "kept").read_text() == "mine"
    second = cli(repo, "task", "list")
    assert "as of the last sync" in second.stderr and "fetched" not in second.stderr, second
