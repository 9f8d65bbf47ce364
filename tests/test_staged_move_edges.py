"""Edges of the staged checkout move (`michi.git.staged`, ADR 0015) where it must do what the `git restore`
it stands in for does: racily clean entries, a kill while installing, a folder in the way, a push that
never reached the remote."""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import git
from test_checkout_paths import _known, _next, make_work

from michi import git as mgit
from michi.git import checkout
from michi.git.checkout import move_paths


@pytest.fixture
def work(tmp_path: Path) -> Path:
    return make_work(tmp_path)


@pytest.fixture(autouse=True)
def _large(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MICHI_STAGED_INDEX_BYTES", "0")
    monkeypatch.setattr(checkout, "_SETTLED_NS", 0)


def _racily_clean(work: Path, path: str, committed: bytes, edited: bytes) -> None:
    """`path` (tracked, holding `committed`) edited to `edited` (same size) in the same file-time tick
    as the index was written: its entry's stat data is the file's, and the index is no older than the
    file. Only git's racy-git check (file mtime >= index mtime: compare the content) sees the edit.
    Built exactly: add the edited file, then point its entry back at the committed blob."""
    assert len(committed) == len(edited)
    (work / path).write_bytes(edited)
    tick = os.stat(work / path).st_mtime_ns - 10 * 10**9  # a tick a while ago (git may compare seconds)
    os.utime(work / path, ns=(tick, tick))
    git(work, "add", path)
    index = work / ".git" / "index"
    data = bytearray(index.read_bytes())
    new_oid = bytes.fromhex(hashlib.sha1(b"blob %d\0" % len(edited) + edited).hexdigest())
    old_oid = bytes.fromhex(hashlib.sha1(b"blob %d\0" % len(committed) + committed).hexdigest())
    at = data.find(new_oid + len(path).to_bytes(2, "big") + path.encode())
    assert at > 0 and data.count(new_oid) == 1
    data[at : at + 20] = old_oid
    data[-20:] = hashlib.sha1(data[:-20]).digest()
    index.write_bytes(bytes(data))
    os.utime(index, ns=(tick, tick))  # the index was written in the same tick as the edit


def test_a_racily_clean_edit_of_the_users_stays_visible(work: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """git smudges a racily clean entry (size 0) whenever it writes the index, so the edit stays seen
    once the index is newer than the file. The staged move's git writes the index against the staging
    tree (the user's file is not there) and installs it with a new mtime: the edit turns invisible."""
    old, new = _next(work)
    _racily_clean(work, "notes.txt", b"mine\n", b"MINE\n")
    assert git(work, "diff-files", "--name-only").split() == ["notes.txt"]  # git sees the edit
    repo, known = mgit.open_repo(work), _known(work, old, new)
    checkout.check_ahead(repo, old, known, new)
    assert any(k[0] == "staged" for k in repo.ahead)
    assert move_paths(repo, old, new, known) == (True, None)
    assert (work / "notes.txt").read_bytes() == b"MINE\n"
    # As after `git restore`: the user's edit is still a change (not hidden behind matching stat data).
    assert git(work, "diff-files", "--name-only").split() == ["notes.txt"]
    assert git(work, "status", "--porcelain").split()[-1:] == ["notes.txt"]


_KILLED_MIDWAY = """
import os, signal, sys
from michi import git as mgit
from michi.git import checkout, indexfile
work, old, new = sys.argv[1:4]
checkout._SETTLED_NS = 0
repo = mgit.open_repo(work)
known = {p: (None if o == "-" else (0o100644, o), None if n == "-" else (0o100644, n))
         for p, o, n in (a.split(":") for a in sys.argv[4:])}
checkout.check_ahead(repo, old, known, new)
assert any(k[0] == "staged" for k in repo.ahead)
def killed(*args, **kw):
    os.kill(os.getpid(), signal.SIGKILL)  # the files are renamed, the index not yet
indexfile.retime = killed
checkout.move_paths(repo, old, new, known)
"""


def test_a_move_killed_while_installing_leaves_no_index_lock(work: Path) -> None:
    """A michi killed midway through the install (files renamed, index not yet) is "finished, not
    refused" by the next move (ADR 0015). Before the staged move, git's restore ran in a child process
    that a kill of michi does not stop, so no `index.lock` stayed; now michi holds it itself."""
    old, new = _next(work)
    known = _known(work, old, new)
    args = [f"{p}:{o[1] if o else '-'}:{n[1] if n else '-'}" for p, (o, n) in known.items()]
    env = {**os.environ, "PYTHONPATH": str(Path(mgit.__file__).parents[2])}
    child = subprocess.run([sys.executable, "-c", _KILLED_MIDWAY, str(work), old, new, *args], env=env)
    assert child.returncode == -signal.SIGKILL
    assert (work / ".tasks" / "b.json").read_text() == "b 2\n"  # renamed before the kill
    # The next michi finishes the move, and git can write the index again.
    assert move_paths(mgit.open_repo(work), old, new, known) == (True, None)
    assert not (work / ".git" / "index.lock").exists()
    assert git(work, "diff-index", "--cached", "--name-only", new) == ""


def test_an_empty_folder_where_a_file_is_added_is_replaced_as_git_does(work: Path) -> None:
    """`_untracked` lets an empty folder stand where the move adds a file (git's checkout removes it, and
    `git restore` moves fine). The staged install renames the file onto the folder: EISDIR, and the move
    fails (again on every later try)."""
    old, new = _next(work)
    (work / ".tasks" / "d.json").mkdir()
    repo, known = mgit.open_repo(work), _known(work, old, new)
    checkout.check_ahead(repo, old, known, new)
    assert any(k[0] == "staged" for k in repo.ahead)
    assert move_paths(repo, old, new, known) == (True, None)
    assert (work / ".tasks" / "d.json").read_text() == "d 1\n"
    assert git(work, "diff-index", "--cached", "--name-only", new) == ""


def test_a_push_that_cannot_reach_the_remote_leaves_no_staging(cli, remote, tmp_path: Path) -> None:
    """The staging starts once the push process does; a push that then fails (remote unreachable: an
    error, not a refusal) skips `drop_prepared`, so its folder (a whole copy of the index, 6 MB at 50k
    tasks) stays in `.git/michi/stage/` (and its `Staged` in a long-lived process's `repo.ahead`)."""
    repo = remote.clone("work")
    assert cli(repo, "init").exit_code == 0
    assert cli(repo, "task", "add", "one").exit_code == 0
    git(repo, "remote", "set-url", "origin", str(tmp_path / "gone.git"))
    assert cli(repo, "task", "add", "two").exit_code != 0
    assert os.listdir(repo / ".git" / "michi" / "stage") == []
