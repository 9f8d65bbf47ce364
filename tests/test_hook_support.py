"""Helpers for the hook tests (a real lock holder, real commits), and the fast path's own tests."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from conftest import git

from michi import git as michi_git
from michi import repo as michi_repo
from michi.hook import install, probe
from michi.repo import find_repo

# A real holder, in the on-disk format the lock uses (ADR 0003): mkdir, publish the owner record, then
# hold until stdin closes. A negative ttl makes a lease that expired before the commit starts.
HOLDER = r"""
import os, sys
from pathlib import Path
from michi.lock.record import Owner, write_owner
lock_dir, token, ttl = Path(sys.argv[1]), sys.argv[2], float(sys.argv[3])
os.mkdir(lock_dir)
owner = Owner.new(pid=os.getpid(), token=token, ttl=ttl, command="task done 42", agent="agent-7")
write_owner(lock_dir, owner)
print("ready", flush=True)
sys.stdin.read()
"""


class Holder:
    """Another process holding the repo lock of `worktree`'s repository: `with Holder(repo) as h:`."""

    def __init__(self, worktree: Path, ttl: float = 300) -> None:
        self.token = uuid.uuid4().hex
        lock_dir = find_repo(worktree).lock_dir
        self.proc = subprocess.Popen(
            [sys.executable, "-c", HOLDER, str(lock_dir), self.token, str(ttl)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None
        assert self.proc.stdout.readline().strip() == "ready"  # awaited, not slept for
        self.pid = self.proc.pid

    def kill(self) -> None:
        """Die without releasing: the lock stays behind with a dead PID."""
        self.proc.kill()
        self.proc.wait()

    def __enter__(self) -> Holder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.kill()
        for stream in (self.proc.stdin, self.proc.stdout):
            if stream is not None:
                stream.close()


def commit(
    worktree: Path, *paths: str, env: dict[str, str] | None = None, args: tuple[str, ...] = ()
) -> subprocess.CompletedProcess[str]:
    """Change `paths` (default: one ordinary file), stage them, and run a real `git commit`."""
    for rel in paths or ("notes.txt",):
        target = worktree / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(f"{uuid.uuid4().hex}\n")
        git(worktree, "add", rel)
    return subprocess.run(
        ["git", "commit", "-m", "hand-made commit", *args],
        cwd=worktree,
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=60,
    )


def installed(worktree: Path) -> Path:
    return Path(install.install(find_repo(worktree)).hook)


# --- the fast path mirrors michi.repo and michi.git; these pin it to them -----------------------------


def test_probe_constants_match_the_originals() -> None:
    assert probe.LOCK_NAME == michi_repo.LOCK_NAME
    assert probe.TASK_PATHSPECS == michi_git.TASK_PATHSPECS


def test_probe_finds_the_same_lock_as_find_repo(local_repo: Path, tmp_path: Path) -> None:
    (local_repo / "sub" / "deeper").mkdir(parents=True)
    git(local_repo, "worktree", "add", "-q", str(tmp_path / "linked"))
    (tmp_path / "linked" / "sub").mkdir()
    for start in (
        local_repo,
        local_repo / "sub" / "deeper",
        tmp_path / "linked",
        tmp_path / "linked" / "sub",
    ):
        assert probe.lock_dir(str(start)) == str(find_repo(start).lock_dir)
    assert probe.lock_dir(str(tmp_path / "linked")) == str(local_repo.resolve() / ".michi.lock")
    outside = tmp_path / "not-a-repo"
    outside.mkdir()
    assert probe.lock_dir(str(outside)) is None


def test_probe_sees_staged_task_files_only(local_repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(local_repo)
    (local_repo / "notes.txt").write_text("x\n")
    git(local_repo, "add", "notes.txt")
    assert probe.task_files_staged() is False
    (local_repo / "libs" / "auth" / ".tasks").mkdir(parents=True)
    (local_repo / "libs" / "auth" / ".tasks" / "a.json").write_text("{}\n")
    git(local_repo, "add", "libs")
    assert probe.task_files_staged() is True
    assert michi_git.staged_task_paths(local_repo) == ["libs/auth/.tasks/a.json"]


def test_probe_sees_fan_out_task_files(local_repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The fan-out layout (`.tasks/<2 hex>/<uuid>.json`, ADR 0006) is one folder deeper: the hook's
    pathspecs must reach it, in the root domain and in others, from a subfolder too."""
    (local_repo / "sub").mkdir()
    monkeypatch.chdir(local_repo / "sub")
    (local_repo / "sub" / "notes.json").write_text("{}\n")  # a JSON file that is no task file
    (local_repo / ".tasks" / "zz").mkdir(parents=True)
    (local_repo / ".tasks" / "zz" / "x.json").write_text("{}\n")  # not a fan-out folder (not hex)
    git(local_repo, "add", "sub", ".tasks")
    assert probe.task_files_staged() is False
    for path in (".tasks/ab/abcd.json", "libs/auth/.tasks/0f/0f12.json"):
        (local_repo / path).parent.mkdir(parents=True, exist_ok=True)
        (local_repo / path).write_text("{}\n")
        git(local_repo, "add", path)
    assert probe.task_files_staged() is True
    assert michi_git.staged_task_paths(local_repo) == [".tasks/ab/abcd.json", "libs/auth/.tasks/0f/0f12.json"]


def test_fast_path_imports_nothing_heavy(local_repo: Path) -> None:
    """The no-lock, no-task-file commit must not load what costs start-up time (ADR 0005)."""
    code = "import sys;from michi.hook.run import main;rc=main([]);print(rc, ' '.join(sorted(sys.modules)))"
    roots = [str(Path(michi_repo.__file__).resolve().parents[1])]
    proc = subprocess.run(
        [sys.executable, "-I", "-S", "-c", f"import sys;sys.path+={roots!r};{code}"],
        cwd=local_repo,
        capture_output=True,
        text=True,
        check=True,
    )
    rc, modules = proc.stdout.split(" ", 1)
    loaded = set(modules.split())
    assert rc == "0"
    assert "michi.hook.probe" in loaded
    heavy = {"subprocess", "pathlib", "dataclasses", "json", "michi.repo", "michi.git", "typer", "git"}
    assert not heavy & loaded, heavy & loaded
