"""The git processes a `Repo` keeps (michi.git.repo): started early, ended without polling."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from michi.git import repo as git_repo
from michi.repo import find_repo


def test_a_process_that_has_not_ended_is_not_taken_for_ended() -> None:
    proc = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    try:
        assert not git_repo._exited(proc, 0.05)
        assert proc.stdin is not None
        proc.stdin.close()
        assert git_repo._exited(proc, 30)
    finally:
        proc.kill()
        proc.wait()


def test_closing_ends_and_reaps_the_cat_file_started_ahead(repo: Path) -> None:
    opened = git_repo.Repo(find_repo(repo))
    opened.prestart()
    (started,) = opened._cat_files.values()
    assert started.poll() is None
    assert opened.cat("HEAD") is not None  # the started process answers
    assert opened.kind("HEAD") == "commit"  # and the other starts when asked
    procs = list(opened._cat_files.values())
    opened.close()
    assert all(p.returncode == 0 for p in procs)  # ended on their own (stdin closed), not killed


def test_a_commit_is_asked_of_git_once(repo: Path) -> None:
    """Objects never change: a commit read (or written) once is read back without `cat-file`."""
    from michi.git import objects

    opened = git_repo.Repo(find_repo(repo))
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True)
        oid = head.stdout.strip()
        first = objects.read_commit(opened, oid)
        asked: list[str] = []
        real = opened._ask
        opened._ask = lambda mode, spec: (asked.append(spec), real(mode, spec))[1]  # type: ignore[method-assign]
        assert objects.read_commit(opened, oid) == first
        written = objects.write_commit(opened, first.tree, [oid], list(first.headers), b"again\n")
        assert objects.read_commit(opened, written).parents == (oid,)
        assert opened.kind(written) == "commit"
        assert asked == []
        assert opened.cat("HEAD") is not None  # a name, not an oid: git says what it names now
        assert asked == ["HEAD"]
    finally:
        opened.close()
