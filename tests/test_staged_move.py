"""The checkout move whose index git writes beside the push (`michi.git.staged`, ADR 0015): the same move
as `git restore` (racily clean entries, filters, a kill while installing, a folder in the way), the index
installed only when nothing changed meanwhile, and git's restore otherwise. Used for a large index only;
here `MICHI_STAGED_INDEX_BYTES=0` makes every index large."""

from __future__ import annotations

import hashlib
import os
import signal
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import git
from test_checkout_paths import _exec_runs, _known, _next, _state, make_work

from michi import git as mgit
from michi.errors import MichiError
from michi.git import checkout, indexfile, staged
from michi.git.checkout import move_paths


@pytest.fixture
def work(tmp_path: Path) -> Path:
    return make_work(tmp_path)


@pytest.fixture(autouse=True)
def _large(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MICHI_STAGED_INDEX_BYTES", "0")
    monkeypatch.setattr(checkout, "_SETTLED_NS", 0)  # the fixture's files are fresh: judge them by stat


def _stage(repo: mgit.Repo, old: str, new: str, known: mgit.Moves) -> staged.Staged:
    checkout.check_ahead(repo, old, known, new)
    kinds = {k[0] for k in repo.ahead}
    assert "restore" not in kinds, "git's restore was prepared instead"
    (move,) = (v for k, v in repo.ahead.items() if k[0] == "staged")
    assert isinstance(move, staged.Staged)
    return move


def _stat_clean(work: Path, paths: list[str]) -> None:
    """git sees these files as they are without reading them: their index entries hold their stat data."""
    assert git(work, "diff-files", "--name-only", "--", *paths) == ""  # stat data only: no refresh
    for path in paths:
        listed = git(work, "ls-files", "--debug", "--", path).splitlines()
        fields = dict(line.strip().split(":", 1) for line in listed[1:] if ":" in line)
        st = os.lstat(work / path)
        assert fields["ctime"].strip() == f"{st.st_ctime_ns // 10**9}:{st.st_ctime_ns % 10**9}"
        assert fields["mtime"].strip() == f"{st.st_mtime_ns // 10**9}:{st.st_mtime_ns % 10**9}"
        assert int(fields["dev"].split()[0]) == st.st_dev & 0xFFFFFFFF
        assert int(fields["dev"].split("ino:")[1]) == st.st_ino & 0xFFFFFFFF


def test_the_staged_index_is_installed_with_the_moved_files(
    work: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    old, new = _next(work)
    (work / "notes.txt").write_text("unstaged edit\n")
    (work / "staged.txt").write_text("staged\n")
    git(work, "add", "staged.txt")
    os.chmod(work / ".git" / "index", 0o640)
    repo, known = mgit.open_repo(work), _known(work, old, new)
    move = _stage(repo, old, new, known)
    runs = _exec_runs(monkeypatch, "restore")
    assert move_paths(repo, old, new, known) == (True, None)
    assert runs == []  # no git restore ran: the staged index was installed
    assert move.proc is None
    # The index it replaced is freed with the staging folder once the lock is let go, not inside it.
    assert (move.where / "index.old").exists()
    mgit.tidy()
    assert not move.where.exists()
    assert (work / ".tasks" / "b.json").read_text() == "b 2\n"
    assert (work / ".tasks" / "d.json").read_text() == "d 1\n"
    assert not (work / ".tasks" / "c.json").exists()
    assert (work / "notes.txt").read_text() == "unstaged edit\n"
    assert git(work, "diff-index", "--cached", "--name-only", new).split() == ["staged.txt"]
    _stat_clean(work, [".tasks/b.json", ".tasks/d.json"])
    assert stat.S_IMODE(os.stat(work / ".git" / "index").st_mode) == 0o640
    assert not (work / ".git" / "index.lock").exists()
    assert os.listdir(work / ".git" / "michi" / "stage") == []


def test_the_users_git_add_while_the_push_ran_is_kept(work: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The index changed after the staging copied it: the staged one is not installed, git moves."""
    old, new = _next(work)
    repo, known = mgit.open_repo(work), _known(work, old, new)
    move = _stage(repo, old, new, known)
    (work / "staged.txt").write_text("staged while the push ran\n")
    git(work, "add", "staged.txt")
    runs = _exec_runs(monkeypatch, "restore")
    assert move_paths(repo, old, new, known) == (True, None)
    assert runs  # git's restore did it
    mgit.tidy()
    assert not move.where.exists()
    assert git(work, "diff-index", "--cached", "--name-only", new).split() == ["staged.txt"]
    assert (work / ".tasks" / "b.json").read_text() == "b 2\n"
    assert git(work, "diff-files", "--name-only") == ""


def test_git_holding_the_index_lock_leaves_the_move_to_git(work: Path) -> None:
    old, new = _next(work)
    repo, known = mgit.open_repo(work), _known(work, old, new)
    _stage(repo, old, new, known)
    (work / ".git" / "index.lock").write_text("")  # another git is writing the index
    before = _state(work)
    with pytest.raises(MichiError, match=r"index\.lock"):
        move_paths(repo, old, new, known)
    assert _state(work) == before
    assert (work / ".git" / "index.lock").read_text() == ""  # not ours: left alone


def _staged_move_writes_crlf(work: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The next commit's move, staged and installed (no git restore ran), wrote CRLF as the attributes say."""
    old, new = _next(work)
    repo, known = mgit.open_repo(work), _known(work, old, new)
    _stage(repo, old, new, known)
    runs = _exec_runs(monkeypatch, "restore")
    assert move_paths(repo, old, new, known) == (True, None)
    assert runs == []
    assert (work / ".tasks" / "b.json").read_bytes() == b"b 2\r\n"
    assert (work / ".tasks" / "d.json").read_bytes() == b"d 1\r\n"


@pytest.mark.parametrize("tracked", [True, False])
def test_the_files_get_gits_filters_and_attributes(
    work: Path, monkeypatch: pytest.MonkeyPatch, tracked: bool
) -> None:
    """Written by git in the staging tree: line endings and attributes as `git restore` gives them,
    from a committed `.gitattributes` or an untracked one in the task folder."""
    (work / ".tasks" / ".gitattributes").write_text("*.json text eol=crlf\n")
    if tracked:
        git(work, "add", ".tasks/.gitattributes")
        git(work, "commit", "-qm", "attributes")
    _staged_move_writes_crlf(work, monkeypatch)
    assert git(work, "diff-files", "--name-only") == ""
    assert git(work, "diff", "--name-only", "--", ".tasks") == ""


def test_an_index_in_version_4_is_moved_by_git(work: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Version 4 compresses paths, so its entries are not found by their bytes: git's restore moves."""
    git(work, "update-index", "--index-version", "4")
    old, new = _next(work)
    repo, known = mgit.open_repo(work), _known(work, old, new)
    _stage(repo, old, new, known)
    runs = _exec_runs(monkeypatch, "restore")
    assert move_paths(repo, old, new, known) == (True, None)
    assert runs
    assert (work / ".tasks" / "b.json").read_text() == "b 2\n"
    assert git(work, "diff-files", "--name-only") == ""
    assert (work / ".git" / "index").read_bytes()[4:8] == (4).to_bytes(4, "big")  # still the user's version


def test_a_staging_never_installed_changes_nothing(work: Path) -> None:
    """The push was refused: the staging is dropped, and nothing of the user's changed."""
    old, new = _next(work)
    repo = mgit.open_repo(work)
    before = _state(work)
    move = _stage(repo, old, new, _known(work, old, new))
    mgit.drop_prepared(repo)
    assert repo.ahead == {} or all(k[0] != "staged" for k in repo.ahead)
    assert _state(work) == before
    mgit.tidy()
    assert not move.where.exists()


def test_a_killed_michis_staging_folder_is_cleared(work: Path) -> None:
    old, new = _next(work)
    dead = subprocess.Popen(["true"])
    dead.wait()  # its pid names no process now
    left = work / ".git" / "michi" / "stage" / f"{dead.pid}.0" / "wt"
    left.mkdir(parents=True)
    repo = mgit.open_repo(work)
    move = _stage(repo, old, new, _known(work, old, new))
    assert not left.parent.exists()
    move.drop()


def test_sha256_repository(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo_dir = make_work(tmp_path, "--object-format=sha256")
    old, new = _next(repo_dir)
    assert len(new) == 64
    repo, known = mgit.open_repo(repo_dir), _known(repo_dir, old, new)
    _stage(repo, old, new, known)
    runs = _exec_runs(monkeypatch, "restore")
    assert move_paths(repo, old, new, known) == (True, None)
    assert runs == []
    assert git(repo_dir, "diff-files", "--name-only") == ""
    assert git(repo_dir, "diff-index", "--cached", "--name-only", new) == ""
    _stat_clean(repo_dir, [".tasks/b.json", ".tasks/d.json"])


def test_transactions_move_the_checkout_by_the_staged_index(
    cli, remote, monkeypatch: pytest.MonkeyPatch
) -> None:
    installed: list[tuple[int, str] | None] = []
    real = staged.Staged.install

    def spied(self: staged.Staged, *args: Any) -> tuple[int, str] | None:
        installed.append(real(self, *args))
        return installed[-1]

    monkeypatch.setattr(staged.Staged, "install", spied)
    repo = remote.clone("work")
    assert cli(repo, "init").exit_code == 0
    for args in (
        ("task", "add", "one"),
        ("task", "add", "two"),
        ("task", "done", "1"),
        ("task", "modify", "2", "-p", "H"),
    ):
        assert cli(repo, *args).exit_code == 0
        assert git(repo, "status", "--porcelain") == ""
        assert git(repo, "diff-files", "--name-only") == ""
        assert git(repo, "diff-index", "--cached", "--name-only", "HEAD") == ""
    assert os.listdir(repo / ".git" / "michi" / "stage") == []
    assert installed and all(done == (0, "") for done in installed)
    changed = git(repo, "show", "--name-only", "--format=", "HEAD").split()
    _stat_clean(repo, [p for p in changed if p.endswith(".json")])


def _files_at(work: Path, commit: str) -> None:
    """The task files as `commit` has them, the index left as it was: where a michi killed between
    writing the files of a move and its index (git's restore, or the staged move) leaves them."""
    for name in ("a", "b", "c", "d"):
        path = work / ".tasks" / f"{name}.json"
        listed = git(work, "ls-tree", commit, "--", f".tasks/{name}.json").split()
        if listed:
            text = subprocess.run(
                ["git", "cat-file", "blob", listed[2]], cwd=work, capture_output=True, check=True
            ).stdout
            if not path.exists() or path.read_bytes() != text:
                path.write_bytes(text)
        else:
            path.unlink(missing_ok=True)


def test_a_move_killed_after_its_files_were_written_is_finished(work: Path) -> None:
    """The files already hold what the move writes: michi's bytes, not the user's, so the next move
    goes ahead (before, it refused for ever: "your local changes would be overwritten")."""
    old, new = _next(work)
    _files_at(work, new)
    (work / "notes.txt").write_text("the user's\n")
    assert move_paths(mgit.open_repo(work), old, new) == (True, None)
    assert git(work, "diff-index", "--cached", "--name-only", new) == ""
    assert git(work, "diff-files", "--name-only").split() == ["notes.txt"]
    assert (work / "notes.txt").read_text() == "the user's\n"


def test_files_an_interrupted_michi_left_at_its_commit_are_moved_on(work: Path) -> None:
    """The killed michi's commit landed and the next goes further: files at that commit's version
    (`own`) are michi's too; a file of any other content is still the user's and refuses."""
    old, new = _next(work)
    scratch = {"GIT_INDEX_FILE": str(work / ".git" / "scratch-index")}
    git(work, "read-tree", new, env=scratch)
    (work / ".git" / "scratch-blob").write_text("b 3\n")
    blob = git(work, "hash-object", "-w", str(work / ".git" / "scratch-blob"))
    git(work, "update-index", "--cacheinfo", f"100644,{blob},.tasks/b.json", env=scratch)
    tree = git(work, "write-tree", env=scratch)
    newer = git(work, "commit-tree", tree, "-p", new, "-m", "three")  # a commit after `new`, built on it
    _files_at(work, new)
    assert move_paths(mgit.open_repo(work), old, newer)[1] is not None  # not known to be michi's
    assert move_paths(mgit.open_repo(work), old, newer, own=[new]) == (True, None)
    assert git(work, "diff-index", "--cached", "--name-only", newer) == ""
    assert git(work, "diff-files", "--name-only") == ""


def test_a_file_of_other_content_where_a_move_writes_still_refuses(work: Path) -> None:
    old, new = _next(work)
    _files_at(work, new)
    (work / ".tasks" / "d.json").write_text("d, mine\n")
    before = _state(work)
    done, refused = move_paths(mgit.open_repo(work), old, new, own=[new])
    assert done and refused and "d.json" in refused
    assert _state(work) == before


def test_a_symlinked_task_folder_is_left_to_git(work: Path, tmp_path: Path) -> None:
    """A rename through a symlinked folder would write outside the work tree: the staged move is not
    installed (even when the folder became a symlink after the move's checks), and git's checkout
    decides (it refuses: the files it knows are not where it put them)."""
    old, new = _next(work)
    repo, known = mgit.open_repo(work), _known(work, old, new)
    move = _stage(repo, old, new, known)
    outside = tmp_path / "outside"
    (work / ".tasks").rename(outside)
    (work / ".tasks").symlink_to(outside)
    before = {p.name: p.read_bytes() for p in outside.iterdir()}
    assert move.install() is None  # as if the checks had passed just before
    assert {p.name: p.read_bytes() for p in outside.iterdir()} == before
    repo.ahead.clear()
    done, refused = move_paths(repo, old, new, known)
    assert done and refused
    assert {p.name: p.read_bytes() for p in outside.iterdir()} == before


def test_a_hand_edit_staged_after_the_check_is_kept(work: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The user stages an edit of a task file the move changes after the check found it clean: the staged
    index is not installed (the index is not the one it was made from), the move is checked again on
    the user's index and refuses, and nothing of the edit is lost."""
    old, new = _next(work)
    repo, known = mgit.open_repo(work), _known(work, old, new)
    _stage(repo, old, new, known)
    real = staged.Staged.install

    def racing(self: staged.Staged, *args: Any) -> tuple[int, str] | None:
        (work / ".tasks" / "b.json").write_text("staged by hand meanwhile\n")
        git(work, "add", ".tasks/b.json")
        return real(self, *args)

    monkeypatch.setattr(staged.Staged, "install", racing)
    done, refused = move_paths(repo, old, new, known)
    assert done and refused and "b.json" in refused
    assert git(work, "show", ":.tasks/b.json") == "staged by hand meanwhile"
    assert (work / ".tasks" / "b.json").read_text() == "staged by hand meanwhile\n"
    assert not (work / ".tasks" / "d.json").exists()  # nothing of the move happened


@pytest.mark.parametrize("path", [".tasks/b.json", ".tasks/d.json"], ids=["changed", "added"])
def test_a_hand_edit_made_after_the_check_is_kept(
    work: Path, monkeypatch: pytest.MonkeyPatch, path: str
) -> None:
    """The user edits (without staging) a task file the move changes, or writes one where the move adds
    one, after the checks found none: the staged files are not renamed over it; the move is checked
    again with the lock held and refuses, the edit kept byte for byte."""
    old, new = _next(work)
    repo, known = mgit.open_repo(work), _known(work, old, new)
    _stage(repo, old, new, known)
    real = staged.Staged.install

    def racing(self: staged.Staged, *args: Any) -> tuple[int, str] | None:
        (work / path).write_text("edited by hand meanwhile\n")
        return real(self, *args)

    monkeypatch.setattr(staged.Staged, "install", racing)
    index = git(work, "ls-files", "-s")
    done, refused = move_paths(repo, old, new, known)
    assert done and refused and path.rpartition("/")[2] in refused
    assert (work / path).read_text() == "edited by hand meanwhile\n"
    assert git(work, "ls-files", "-s") == index  # nothing of the move happened
    assert not (work / ".git" / "index.lock").exists()


def test_a_staged_move_failing_after_its_files_moved_leaves_nothing_of_itself(
    work: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The staged install fails after it renamed the files in (a moved file changed meanwhile): the files
    go back to the old commit, the added one removed though the index never named it, and the lock
    is let go."""
    old, new = _next(work)
    repo, known = mgit.open_repo(work), _known(work, old, new)
    before = (git(work, "ls-files", "-s"), {p.name: p.read_bytes() for p in (work / ".tasks").iterdir()})
    _stage(repo, old, new, known)
    monkeypatch.setattr(staged.indexfile, "retime", lambda *args: None)
    done, refused = move_paths(repo, old, new, known)
    assert done and refused and "changed while it was moved" in refused
    after = (git(work, "ls-files", "-s"), {p.name: p.read_bytes() for p in (work / ".tasks").iterdir()})
    assert after == before
    assert git(work, "status", "--porcelain") == ""
    assert not (work / ".git" / "index.lock").exists()


def test_an_index_lock_a_killed_michi_held_is_removed_and_no_other(work: Path) -> None:
    """The staging folder of a dead process names the `index.lock` it held: that very file is removed
    (git would take it for a git still writing); a lock file of any other process stays, another inode
    or the same inode reused by a later file (another ctime: the user removed the dead one's lock, as
    told, and a git made its own)."""
    old, new = _next(work)
    dead = subprocess.Popen(["true"])
    dead.wait()
    lock = work / ".git" / "index.lock"
    cases = [
        (False, lambda st: f"{st.st_dev} {st.st_ino + 1} {st.st_ctime_ns}\n"),
        (False, lambda st: f"{st.st_dev} {st.st_ino} {st.st_ctime_ns + 1}\n"),
        (True, lambda st: f"{st.st_dev} {st.st_ino} {st.st_ctime_ns}\n"),
        (True, lambda st: f"{st.st_dev} {st.st_ino}\n"),  # written by an earlier michi
    ]
    for ours, marker in cases:
        lock.write_text("")
        left = work / ".git" / "michi" / "stage" / f"{dead.pid}.held"
        left.mkdir(parents=True)
        (left / staged.HELD).write_text(marker(os.lstat(lock)))
        staged.clear_dead(work / ".git")
        assert lock.exists() is not ours
        assert not left.exists()
        lock.unlink(missing_ok=True)
    assert move_paths(mgit.open_repo(work), old, new) == (True, None)


def test_a_clone_whose_pushes_are_being_refused_stages_only_a_splice(
    cli, remote, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Staging a copy of the whole index is work done on the bet that the push lands: right after a
    refused push (other clones landing first) only a splice is staged (git writes only the moved
    entries, `michi.git.splice`), or nothing and the move is git's restore; the checkout is moved all the
    same."""
    started: list[staged.Staged] = []
    real = staged.Staged.__init__

    def spied(self: staged.Staged, *args: object, **kw: object) -> None:
        real(self, *args, **kw)  # type: ignore[arg-type]
        if self.proc is not None:
            started.append(self)

    monkeypatch.setattr(staged.Staged, "__init__", spied)
    repo = remote.clone("work")
    assert cli(repo, "init").exit_code == 0
    assert cli(repo, "task", "add", "one").exit_code == 0
    assert started and not started[-1].spliced  # the first file of its folder: a copy of the index
    started.clear()
    (repo / ".git" / "michi" / "contended").touch()  # a push of this clone was refused just now
    assert cli(repo, "task", "add", "two").exit_code == 0
    assert cli(repo, "task", "done", "1").exit_code == 0
    assert started and all(s.spliced for s in started)
    assert git(repo, "status", "--porcelain") == ""
    assert git(repo, "diff-files", "--name-only") == ""
    assert git(repo, "write-tree") == git(repo, "rev-parse", "HEAD^{tree}")


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


def _renamed(st: os.stat_result) -> os.stat_result:
    """`st` as a rename leaves it: the same file, a later ctime."""
    fields = [*st[:10], st.st_atime, st.st_mtime, st.st_ctime + 7]
    fields += [st.st_atime_ns, st.st_mtime_ns, st.st_ctime_ns + 7_000_000_123]
    later = os.stat_result(fields)
    assert later.st_ctime_ns != st.st_ctime_ns and later.st_mtime_ns == st.st_mtime_ns
    return later


@pytest.mark.parametrize("fmt", ["sha1", "sha256"])
def test_the_checksum_made_ahead_of_the_first_moved_entry_is_the_whole_files(
    tmp_path: Path, fmt: str
) -> None:
    """The staged index's checksum is made beside the push up to its first moved entry, and after the
    move only from there: the same bytes as hashing the whole file, wherever the moved entries are (the
    first, the last, several), and an index git then reads (it verifies the checksum)."""
    work = tmp_path / "w"
    git(tmp_path, "init", "-q", "-b", "main", f"--object-format={fmt}", str(work))
    names = [f".tasks/{i:02x}/{i:03d}.json" for i in range(0, 256, 5)]
    for name in names:
        (work / name).parent.mkdir(parents=True, exist_ok=True)
        (work / name).write_text(f"{name}\n")
    git(work, "add", "-A")
    git(work, "commit", "-qm", "many")
    width = 20 if fmt == "sha1" else 32
    raw = (work / ".git" / "index").read_bytes()
    entries = dict(line.split("\t") for line in git(work, "ls-files", "-s").splitlines())
    oid_of = {path: meta.split()[1] for meta, path in ((m, p) for m, p in entries.items())}
    for chosen in ([names[0]], [names[-1]], [names[7], names[30], names[-2]]):
        # A file the move wrote anew: same content and inode, a later ctime (as a rename gives it).
        moved = [indexfile.Moved(p, oid_of[p], os.lstat(work / p)) for p in chosen]
        where = indexfile.locate(raw, moved)
        assert where is not None
        prefix = indexfile.Prefix(raw, where, width)
        assert prefix.end == min(where)
        now = [_renamed(os.lstat(work / p)) for p in chosen]
        ahead, whole = bytearray(raw), bytearray(raw)
        patched = indexfile.retime(ahead, moved, where, now, 0, width, prefix)
        assert patched == indexfile.retime(whole, moved, where, now, 0, width)
        assert ahead == whole != bytearray(raw)
        assert bytes(ahead[-width:]) == hashlib.new(fmt, bytes(ahead[:-width])).digest()
        (work / ".git" / "index").write_bytes(bytes(ahead))
        assert git(work, "ls-files", "--", chosen[0]).strip() == chosen[0]  # git reads it: checksum good
        (work / ".git" / "index").write_bytes(raw)


@pytest.mark.parametrize("link", ["michi", "michi/stage"])
def test_a_symlinked_staging_folder_is_neither_written_nor_cleared_through(
    work: Path, tmp_path: Path, link: str
) -> None:
    """`.git/michi` or its `stage` a symlink to a folder outside the repository: the staging would have
    been made there, and a dead michi's staging folder (a name starting with a pid no process has)
    cleared there, deleting whatever of the user's had such a name. git's restore moves instead."""
    elsewhere = tmp_path / "elsewhere"
    dead = subprocess.Popen(["true"])
    dead.wait()  # its pid names no process now
    precious = elsewhere / "stage" / f"{dead.pid}.photos" / "keep.txt"
    precious.parent.mkdir(parents=True)
    precious.write_text("the user's\n")
    (work / ".git" / "michi").mkdir(exist_ok=True)
    if link == "michi":
        (work / ".git" / "michi").rmdir()
        (work / ".git" / "michi").symlink_to(elsewhere)
    else:
        (work / ".git" / "michi" / "stage").symlink_to(elsewhere / "stage")
    old, new = _next(work)
    repo, known = mgit.open_repo(work), _known(work, old, new)
    checkout.check_ahead(repo, old, known, new)
    staged_through = any(k[0] == "staged" for k in repo.ahead)
    assert move_paths(repo, old, new, known) == (True, None)
    mgit.drop_prepared(repo)
    assert precious.read_text() == "the user's\n"
    assert os.listdir(elsewhere / "stage") == [f"{dead.pid}.photos"]
    assert not staged_through
    assert (work / ".tasks" / "b.json").read_text() == "b 2\n"


def test_a_smudge_filter_run_from_the_work_tree_smudges_the_moved_files(work: Path) -> None:
    """A filter command named relative to the work tree (`tools/smudge`, as a repository ships its own)
    runs where git runs it, the top of the work tree: in the staging tree it was not found, git wrote
    the file unsmudged, and the index recorded it as clean. git's restore moves such paths."""
    (work / "tools").mkdir()
    (work / "tools" / "smudge").write_text('#!/bin/sh\nsed "s/^/smudged: /"\n')
    (work / "tools" / "smudge").chmod(0o755)
    (work / ".gitattributes").write_text("*.json filter=mine\n")
    git(work, "add", "tools", ".gitattributes")
    git(work, "commit", "-qm", "a filter of the repository's")
    git(work, "config", "filter.mine.smudge", "tools/smudge")
    git(work, "config", "filter.mine.clean", 'sed "s/^smudged: //"')
    old, new = _next(work)
    repo, known = mgit.open_repo(work), _known(work, old, new)
    checkout.check_ahead(repo, old, known, new)
    assert move_paths(repo, old, new, known) == (True, None)
    mgit.drop_prepared(repo)
    assert (work / ".tasks" / "b.json").read_text() == "smudged: b 2\n"
    assert (work / ".tasks" / "d.json").read_text() == "smudged: d 1\n"
    assert git(work, "diff", "--name-only", "--", ".tasks") == ""


def test_a_filter_the_moved_paths_do_not_use_leaves_the_move_staged(work: Path) -> None:
    """A smudge filter for other files (`*.psd filter=lfs`): the task files' move is still staged."""
    (work / ".gitattributes").write_text("*.psd filter=lfs\n")
    git(work, "add", ".gitattributes")
    git(work, "commit", "-qm", "large files")
    git(work, "config", "filter.lfs.process", "git-lfs filter-process")
    old, new = _next(work)
    repo, known = mgit.open_repo(work), _known(work, old, new)
    _stage(repo, old, new, known)
    assert move_paths(repo, old, new, known) == (True, None)
    assert (work / ".tasks" / "b.json").read_text() == "b 2\n"


def test_attributes_from_a_relative_attributes_file_apply_to_the_moved_files(
    work: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`core.attributesFile` named relative to the work tree, where git reads it from: the staging git,
    at the top of the staging tree, found nothing there and wrote LF where git writes CRLF."""
    (work / ".myattributes").write_text("*.json text eol=crlf\n")
    git(work, "config", "core.attributesFile", ".myattributes")
    _staged_move_writes_crlf(work, monkeypatch)


def test_a_symlink_among_the_staging_folders_is_left_alone(work: Path, tmp_path: Path) -> None:
    """A symlink named as a dead michi's staging folder: not followed (its target's `index.lock.held`
    read, the target removed), not removed either; and the move goes on (rmtree refused the symlink with
    an error that ended every move: the local branch was never updated again)."""
    target = tmp_path / "elsewhere"
    target.mkdir()
    (target / "keep.txt").write_text("the user's\n")
    dead = subprocess.Popen(["true"])
    dead.wait()
    stage = work / ".git" / "michi" / "stage"
    stage.mkdir(parents=True)
    (stage / f"{dead.pid}.0").symlink_to(target)
    old, new = _next(work)
    repo, known = mgit.open_repo(work), _known(work, old, new)
    _stage(repo, old, new, known)
    assert move_paths(repo, old, new, known) == (True, None)
    assert (target / "keep.txt").read_text() == "the user's\n"
    assert (stage / f"{dead.pid}.0").is_symlink()
    assert (work / ".tasks" / "b.json").read_text() == "b 2\n"


def test_a_staging_still_at_work_when_dropped_is_killed_not_waited_for(
    work: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The push refused while the staging git still writes its 6 MB copy of the index: the lock's holder
    kills it (it writes only in the staging folder) instead of waiting for it; the user's index and files
    are untouched and the folder goes once the lock is let go."""
    from test_checkout_paths import _blocked_git, _dropped_without_waiting

    old, new = _next(work)
    repo = mgit.open_repo(work)
    before = _state(work)
    fifo = _blocked_git(repo, tmp_path, monkeypatch)
    move = _stage(repo, old, new, _known(work, old, new))
    assert _dropped_without_waiting(repo, fifo), "dropping waited for the staging git"
    assert _state(work) == before
    assert not move.where.exists()
    assert not (work / ".git" / "index.lock").exists()


def test_a_staging_whose_index_is_still_being_read_when_dropped_is_not_waited_for(
    work: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The push refused after the staging git finished, while its reader still builds and checks the
    new index (a spliced one is built and written here; up to ~50 ms inside a refused round's hold on
    a busy machine): the lock's holder does not wait for it. The reader stops at its next step, installs
    nothing, and the folder goes once the lock is let go."""
    import threading

    old, new = _next(work)
    repo = mgit.open_repo(work)
    before = _state(work)
    reading, go = threading.Event(), threading.Event()
    real = staged.indexfile.Prefix

    def held(*args: object, **kw: object) -> object:
        reading.set()
        go.wait(30)
        return real(*args, **kw)

    monkeypatch.setattr(staged.indexfile, "Prefix", held)
    move = _stage(repo, old, new, _known(work, old, new))
    assert reading.wait(30), "the reader never reached its checksum"
    dropped = threading.Thread(target=mgit.drop_prepared, args=(repo,), daemon=True)
    dropped.start()
    dropped.join(timeout=10)
    waited = dropped.is_alive()
    go.set()
    dropped.join()
    mgit.tidy()
    assert not waited, "dropping waited for the reader"
    assert move.found is None and not move.where.exists()
    assert _state(work) == before
