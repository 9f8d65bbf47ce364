"""Moving the user's index and work tree by the changed paths only (ADR 0015): the same promise as
`git read-tree -m -u`, checked against real git."""

from __future__ import annotations

import hashlib
import os
import signal
import struct
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from conftest import git

from michi import errors as mgit_errors
from michi import git as mgit
from michi.git import checkout, heldindex, indexwalk, prepared
from michi.git.checkout import move_paths


@pytest.fixture
def work(tmp_path: Path) -> Path:
    return make_work(tmp_path)


def make_work(tmp_path: Path, *init: str) -> Path:
    """A repository with three task files and a file of the user's, committed (`init`: more options)."""
    repo = tmp_path / "w"
    git(tmp_path, "init", "-q", "-b", "main", *init, str(repo))
    (repo / ".tasks").mkdir()
    for name in ("a", "b", "c"):
        (repo / ".tasks" / f"{name}.json").write_text(f"{name} 1\n")
    (repo / "notes.txt").write_text("mine\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "one")
    return repo


def _next(repo: Path) -> tuple[str, str]:
    """A second commit (b changed, c deleted, d added), built without moving HEAD, index or files."""
    old = git(repo, "rev-parse", "HEAD").strip()
    env = {"GIT_INDEX_FILE": str(repo / ".git" / "scratch-index")}
    git(repo, "read-tree", old, env=env)
    for name, text in (("b", "b 2\n"), ("d", "d 1\n")):
        scratch = repo / ".git" / "scratch-blob"
        scratch.write_text(text)
        blob = git(repo, "hash-object", "-w", str(scratch))
        git(repo, "update-index", "--add", "--cacheinfo", f"100644,{blob},.tasks/{name}.json", env=env)
    git(repo, "update-index", "--force-remove", ".tasks/c.json", env=env)
    tree = git(repo, "write-tree", env=env).strip()
    new = git(repo, "commit-tree", tree, "-p", old, "-m", "two").strip()
    return old, new


def _entry(repo: Path, commit: str, path: str) -> tuple[int, str] | None:
    listed = git(repo, "ls-tree", commit, "--", path).split()
    return (int(listed[0], 8), listed[2]) if listed else None


def _state(repo: Path) -> tuple[str, dict[str, bytes]]:
    files = {
        str(p.relative_to(repo)): p.read_bytes()
        for p in repo.rglob("*")
        if p.is_file() and ".git" not in p.parts
    }
    return git(repo, "ls-files", "-s"), files


def test_moves_only_changed_paths_and_keeps_the_users_work(work: Path) -> None:
    old, new = _next(work)
    (work / "notes.txt").write_text("unstaged edit\n")
    (work / "staged.txt").write_text("staged\n")
    git(work, "add", "staged.txt")
    (work / ".tasks" / "a.json").write_text("a edited by hand\n")  # a does not change: it stays as is
    repo = mgit.open_repo(work)
    assert move_paths(repo, old, new) == (True, None)
    assert (work / ".tasks" / "b.json").read_text() == "b 2\n"
    assert (work / ".tasks" / "d.json").read_text() == "d 1\n"
    assert not (work / ".tasks" / "c.json").exists()
    assert (work / ".tasks" / "a.json").read_text() == "a edited by hand\n"
    assert (work / "notes.txt").read_text() == "unstaged edit\n"
    # The index holds the new commit's task files (plus the user's staged file), with valid stat data.
    assert git(work, "diff-index", "--cached", "--name-only", new).split() == ["staged.txt"]
    assert git(work, "diff-files", "--name-only").split() == [".tasks/a.json", "notes.txt"]


@pytest.mark.parametrize("case", ["staged", "unstaged", "deleted", "untracked"])
def test_refuses_and_changes_nothing_when_the_user_has_work_in_the_way(work: Path, case: str) -> None:
    old, new = _next(work)
    if case == "staged":
        (work / ".tasks" / "b.json").write_text("mine\n")
        git(work, "add", ".tasks/b.json")
    elif case == "unstaged":
        (work / ".tasks" / "c.json").write_text("mine\n")
    elif case == "deleted":
        (work / ".tasks" / "b.json").unlink()
    else:
        (work / ".tasks" / "d.json").write_text("untracked, mine\n")
    before = _state(work)
    done, refused = move_paths(mgit.open_repo(work), old, new)
    assert done and refused
    assert _state(work) == before
    # read-tree agrees that this move must be refused; it would overwrite a deleted file (the user's
    # deletion) where michi refuses: a deletion is the user's work too.
    if case != "deleted":
        assert mgit.read_tree_update(mgit.open_repo(work), old, new, env={"MICHI_X": "1"}) is not None


def test_a_touched_but_unchanged_file_does_not_block(work: Path) -> None:
    old, new = _next(work)
    path = work / ".tasks" / "b.json"
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 5_000_000_000))
    assert move_paths(mgit.open_repo(work), old, new) == (True, None)
    assert path.read_text() == "b 2\n"


def test_a_deleted_file_takes_its_empty_folder_along(work: Path) -> None:
    old = git(work, "rev-parse", "HEAD").strip()
    (work / "dom" / ".tasks").mkdir(parents=True)
    (work / "dom" / ".tasks" / "x.json").write_text("x\n")
    git(work, "add", "-A")
    git(work, "commit", "-qm", "dom")
    new = git(work, "rev-parse", "HEAD").strip()
    assert move_paths(mgit.open_repo(work), new, old) == (True, None)
    assert not (work / "dom").exists()
    assert git(work, "diff-index", "--cached", "--name-only", old) == ""
    assert git(work, "diff-files", "--name-only") == ""


@pytest.mark.parametrize("users_file", [False, True])
def test_a_folder_that_becomes_a_file(work: Path, users_file: bool) -> None:
    (work / "api" / ".tasks").mkdir(parents=True)
    (work / "api" / ".tasks" / "x.json").write_text("x\n")
    git(work, "add", "-A")
    git(work, "commit", "-qm", "folder")
    old = git(work, "rev-parse", "HEAD")
    git(work, "rm", "-q", "-r", "--cached", "api")
    scratch = work / ".git" / "scratch-blob"
    scratch.write_text("a file now\n")
    blob = git(work, "hash-object", "-w", str(scratch))
    git(work, "update-index", "--add", "--cacheinfo", f"100644,{blob},api/.tasks")
    new = git(work, "commit-tree", git(work, "write-tree"), "-p", old, "-m", "file")
    git(work, "read-tree", old)  # index back at old, work tree untouched
    if users_file:
        (work / "api" / ".tasks" / "mine.txt").write_text("mine\n")
    before = _state(work)
    done, refused = move_paths(mgit.open_repo(work), old, new)
    assert done
    if users_file:
        assert refused and _state(work) == before
    else:
        assert refused is None
        assert (work / "api" / ".tasks").read_text() == "a file now\n"


def test_known_changes_move_like_the_diff(work: Path) -> None:
    """The transaction passes the paths it changed with their entries before and after (the trees it
    edited); the move must be the same as from the trees' diff, and a path it left as it was is no move."""
    old, new = _next(work)
    names = [".tasks/a.json", ".tasks/b.json", ".tasks/c.json", ".tasks/d.json"]
    known = {p: (_entry(work, old, p), _entry(work, new, p)) for p in names}
    assert known[".tasks/a.json"][0] == known[".tasks/a.json"][1]  # written again, unchanged
    (work / ".tasks" / "a.json").write_text("a edited by hand\n")  # so not in the way
    (work / "notes.txt").write_text("unstaged edit\n")
    assert move_paths(mgit.open_repo(work), old, new, known) == (True, None)
    assert git(work, "diff-index", "--cached", "--name-only", new) == ""
    assert git(work, "diff-files", "--name-only").split() == [".tasks/a.json", "notes.txt"]
    assert not (work / ".tasks" / "c.json").exists()
    (work / ".tasks" / "b.json").write_text("mine\n")
    # A wrong claim (b deleted) would be caught by the checks, not obeyed blindly.
    back = {".tasks/b.json": (_entry(work, new, ".tasks/b.json"), None)}
    done, refused = move_paths(mgit.open_repo(work), new, old, back)
    assert done and refused and (work / ".tasks" / "b.json").read_text() == "mine\n"


def test_known_changes_past_the_limit_go_to_read_tree_without_a_diff(work: Path) -> None:
    """An import chunk changes 10,000 paths: the transaction's own list says so, and no `diff-tree` of
    the two commits runs to learn it again (ADR 0015); the caller's one read-tree moves them."""
    from michi.git.checkout import MAX_PATHS

    old, new = _next(work)
    known = {f".tasks/n{i}.json": (None, (0o100644, "1" * 40)) for i in range(MAX_PATHS + 1)}
    before = _state(work)
    assert move_paths(mgit.open_repo(work), old, new, known) == (False, None)  # the diff says 3 paths
    assert _state(work) == before
    assert mgit.read_tree_update(mgit.open_repo(work), old, new) is None
    assert git(work, "diff-index", "--cached", "--name-only", new) == ""


def _many_files(repo: Path, count: int) -> tuple[str, str]:
    """A commit adding `count` task files, built without moving HEAD, index or files."""
    old = git(repo, "rev-parse", "HEAD").strip()
    env = {"GIT_INDEX_FILE": str(repo / ".git" / "scratch-index")}
    git(repo, "read-tree", old, env=env)
    scratch = repo / ".git" / "scratch-blob"
    scratch.write_text("{}\n")
    blob = git(repo, "hash-object", "-w", str(scratch))
    listing = "".join(f"100644 {blob}\t.tasks/many/n{i}.json\n" for i in range(count))
    subprocess.run(
        ["git", "update-index", "--index-info"],
        cwd=repo,
        input=listing,
        text=True,
        check=True,
        env={**os.environ, **env},
    )
    tree = git(repo, "write-tree", env=env).strip()
    return old, git(repo, "commit-tree", tree, "-p", old, "-m", "many").strip()


@pytest.mark.parametrize("chosen", [None, "1"])
def test_a_large_move_writes_files_with_parallel_workers_unless_the_user_chose(
    work: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chosen: str | None
) -> None:
    """Creating thousands of files bounds an import: git's parallel checkout writes them on every core,
    except where the user set `checkout.workers` themselves (ADR 0015)."""
    from michi.git.checkout import MAX_PATHS

    if chosen is not None:
        git(work, "config", "checkout.workers", chosen)
    old, new = _many_files(work, MAX_PATHS + 50)
    trace = tmp_path / "trace.json"
    monkeypatch.setenv("GIT_TRACE2_EVENT", str(trace))
    assert mgit.read_tree_update(mgit.open_repo(work), old, new) is None
    assert git(work, "diff-index", "--cached", "--name-only", new) == ""
    assert (work / ".tasks" / "many" / "n0.json").read_text() == "{}\n"
    workers = [line for line in trace.read_text().splitlines() if "checkout--worker" in line]
    assert bool(workers) == (chosen is None)


def test_a_file_that_becomes_a_folder(work: Path) -> None:
    (work / "api").mkdir()
    (work / "api" / ".tasks").write_text("a file\n")
    git(work, "add", "-A")
    git(work, "commit", "-qm", "file")
    old = git(work, "rev-parse", "HEAD").strip()
    git(work, "rm", "-q", "--cached", "api/.tasks")
    scratch = work / ".git" / "scratch-blob"
    scratch.write_text("x\n")
    blob = git(work, "hash-object", "-w", str(scratch))
    git(work, "update-index", "--add", "--cacheinfo", f"100644,{blob},api/.tasks/x.json")
    new = git(work, "commit-tree", git(work, "write-tree"), "-p", old, "-m", "folder").strip()
    git(work, "read-tree", old)  # index back at old, work tree untouched
    assert move_paths(mgit.open_repo(work), old, new) == (True, None)
    assert (work / "api" / ".tasks" / "x.json").read_text() == "x\n"
    assert git(work, "diff-index", "--cached", "--name-only", new) == ""
    assert git(work, "diff-files", "--name-only") == ""


def _child_with_file(work: Path, old: str, path: str, text: str) -> str:
    """A commit on `old` whose index adds `path` with `text` (built without touching the work tree);
    the index is put back at `old`."""
    scratch = work / ".git" / "scratch-blob"
    scratch.write_text(text)
    blob = git(work, "hash-object", "-w", str(scratch))
    git(work, "update-index", "--add", "--cacheinfo", f"100644,{blob},{path}")
    new = git(work, "commit-tree", git(work, "write-tree"), "-p", old, "-m", path).strip()
    git(work, "read-tree", old)
    return new


def test_a_staged_file_inside_a_folder_that_becomes_a_file_is_kept(work: Path) -> None:
    """The folder's pathspec names everything in it: a file of the user's there must refuse the move,
    even when it is staged and gone from the work tree (no untracked file shows it)."""
    (work / "api" / ".tasks").mkdir(parents=True)
    (work / "api" / ".tasks" / "x.json").write_text("x\n")
    git(work, "add", "-A")
    git(work, "commit", "-qm", "folder")
    old = git(work, "rev-parse", "HEAD").strip()
    git(work, "rm", "-q", "-r", "--cached", "api")
    new = _child_with_file(work, old, "api/.tasks", "a file now\n")
    (work / "api" / ".tasks" / "mine.txt").write_text("mine\n")
    git(work, "add", "api/.tasks/mine.txt")
    (work / "api" / ".tasks" / "mine.txt").unlink()
    before = _state(work)
    done, refused = move_paths(mgit.open_repo(work), old, new)
    assert done and refused
    assert _state(work) == before
    assert "api/.tasks/mine.txt" in git(work, "ls-files", "--stage")


def test_the_users_checkout_hook_does_not_run(work: Path) -> None:
    """Moving michi's files is not the user's checkout: no hook of theirs runs (read-tree ran none)."""
    old, new = _next(work)
    hooks = work / ".git" / "hooks"
    hooks.mkdir(exist_ok=True)
    ran = work / ".git" / "hook-ran"
    hook = hooks / "post-checkout"
    hook.write_text(f"#!/bin/sh\ntouch '{ran}'\n")
    hook.chmod(0o755)
    assert move_paths(mgit.open_repo(work), old, new) == (True, None)
    assert (work / ".tasks" / "d.json").read_text() == "d 1\n"
    assert not ran.exists()
    git(work, "restore", "--source", old, "--staged", "--worktree", "--", ".tasks")
    assert ran.exists()  # the hook would run: the test can fail


def test_edit_tree_reports_what_each_changed_path_held(work: Path) -> None:
    """The transaction moves the checkout by what `edit_tree` saw (ADR 0015): it must be the old tree's."""
    old = git(work, "rev-parse", "HEAD").strip()
    repo = mgit.open_repo(work)
    blob = mgit.write_blob(repo, b"new\n")
    changes: dict[str, tuple[int, str] | None] = {
        ".tasks/b.json": (mgit.BLOB_MODE, blob),  # changed
        ".tasks/c.json": None,  # deleted
        "dom/.tasks/x.json": (mgit.BLOB_MODE, blob),  # added, in a new folder
        "notes.txt": (mgit.BLOB_MODE, blob),  # at the root
    }
    seen: dict[str, tuple[int, str] | None] = {}
    new_tree = mgit.edit_tree(repo, mgit.tree_of(repo, old), changes, seen=seen)
    assert seen == {p: _entry(work, old, p) for p in changes}
    assert seen["dom/.tasks/x.json"] is None and seen[".tasks/b.json"] is not None
    new = git(work, "commit-tree", new_tree, "-p", old, "-m", "edited").strip()
    assert {p: (seen[p], c) for p, c in changes.items()} == {
        p: (_entry(work, old, p), _entry(work, new, p)) for p in changes
    }


@pytest.mark.parametrize("kind", ["file", "symlink"])
def test_a_users_file_where_a_new_folder_must_be_is_kept(work: Path, kind: str) -> None:
    """git's checkout unlinks a file in the way of a folder it creates; the user's file refuses the move."""
    old = git(work, "rev-parse", "HEAD").strip()
    new = _child_with_file(work, old, "dom/.tasks/x.json", "x\n")
    if kind == "file":
        (work / "dom").write_text("mine\n")
    else:
        (work / "elsewhere").mkdir()
        (work / "dom").symlink_to("elsewhere")
    before = _state(work)
    done, refused = move_paths(mgit.open_repo(work), old, new)
    assert done and refused and "dom" in refused
    assert _state(work) == before and os.path.islink(work / "dom") == (kind == "symlink")
    assert not (work / "elsewhere" / ".tasks").exists()
    assert mgit.read_tree_update(mgit.open_repo(work), old, new, env={"MICHI_X": "1"}) is not None


def _known(work: Path, old: str, new: str) -> mgit.Moves:
    paths = [".tasks/b.json", ".tasks/c.json", ".tasks/d.json"]
    return {p: (_entry(work, old, p), _entry(work, new, p)) for p in paths}


def _exec_runs(monkeypatch: pytest.MonkeyPatch, command: str) -> list[tuple[str, ...]]:
    """The `command` processes (e.g. "diff-index") move_paths runs itself, not those started ahead."""
    runs: list[tuple[str, ...]] = []
    real = checkout._exec

    def counted(repo: mgit.Repo, *args: str, **kw: object) -> object:
        if command in args:
            runs.append(args)
        return real(repo, *args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(checkout, "_exec", counted)
    return runs


def _settled(work: Path) -> None:
    """Every tracked file last modified well before the index was written (none racily clean), as a
    work tree is some time after a checkout."""
    then = os.stat(work / ".git" / "index").st_mtime_ns - 10 * 10**9
    for path in git(work, "ls-files", "-z").split("\0"):
        if path:
            os.utime(work / path, ns=(then, then))
    git(work, "update-index", "-q", "--refresh")


def _kind_of_check(monkeypatch: pytest.MonkeyPatch, kind: str) -> type:
    """Force the check beside the push to be git's processes (`_Ahead`) or the index read (`_Read`)."""
    if kind == "git":
        monkeypatch.setattr(checkout._Read, "made", classmethod(lambda cls, *a: None))
        return checkout._Ahead
    return checkout._Read


@pytest.mark.parametrize("kind", ["read", "git"])
def test_a_check_started_ahead_stands_in_for_the_first_one(
    work: Path, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    monkeypatch.setattr(checkout, "_SETTLED_NS", 0)  # the fixture's files are fresh; no need to wait
    expected = _kind_of_check(monkeypatch, kind)
    old, new = _next(work)
    _settled(work)
    repo = mgit.open_repo(work)
    started: list[tuple[str, ...]] = []
    real_start = repo.start
    monkeypatch.setattr(repo, "start", lambda args, **kw: started.append(args) or real_start(args, **kw))
    checkout.check_ahead(repo, old, _known(work, old, new))
    (ahead,) = repo.ahead.values()
    assert isinstance(ahead, expected), "the check did not start"
    assert (started == []) is (kind == "read")  # read from the index: no git process
    runs = _exec_runs(monkeypatch, "diff-index")
    assert move_paths(repo, old, new, _known(work, old, new)) == (True, None)
    assert runs == []  # its answer was used
    assert repo.ahead == {}
    assert (work / ".tasks" / "b.json").read_text() == "b 2\n"


@pytest.mark.parametrize("kind", ["read", "git"])
@pytest.mark.parametrize("case", ["edited", "staged", "created"])
def test_a_check_started_ahead_counts_for_nothing_once_the_user_touched_a_path(
    work: Path, monkeypatch: pytest.MonkeyPatch, case: str, kind: str
) -> None:
    """The user's edit lands after the check ran clean (the push was still running): same size, so only
    the stat data tells; it must be found, and nothing of it lost."""
    monkeypatch.setattr(checkout, "_SETTLED_NS", 0)
    expected = _kind_of_check(monkeypatch, kind)
    old, new = _next(work)
    _settled(work)
    repo = mgit.open_repo(work)
    checkout.check_ahead(repo, old, _known(work, old, new))
    (ahead,) = repo.ahead.values()
    assert isinstance(ahead, expected)
    for proc in getattr(ahead, "procs", []):
        proc.wait()  # it has answered "clean" by now
    if case == "edited":
        (work / ".tasks" / "b.json").write_text("b X\n")  # as long as what michi's check saw
    elif case == "staged":
        (work / ".tasks" / "b.json").write_text("b X\n")
        git(work, "add", ".tasks/b.json")
    else:
        (work / ".tasks" / "d.json").write_text("d X\n")
    before = _state(work)
    runs = _exec_runs(monkeypatch, "diff-index")
    done, refused = move_paths(repo, old, new, _known(work, old, new))
    assert done and refused
    assert runs  # checked again, as without the check ahead
    assert _state(work) == before


def test_no_check_ahead_on_files_changed_too_recently_to_judge_by_stat(
    work: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(checkout, "_SETTLED_NS", 3_600 * 10**9)  # "recently": within the hour
    old, new = _next(work)
    repo, known = mgit.open_repo(work), _known(work, old, new)
    (work / ".tasks" / "b.json").write_text("b 1\n")  # rewritten just now, same content
    checkout.check_ahead(repo, old, known)
    (ahead,) = repo.ahead.values()
    assert isinstance(ahead, checkout._Ahead) and not ahead.procs
    assert move_paths(repo, old, new, known) == (True, None)


@pytest.mark.parametrize("ahead", [True, False], ids=["listed-beside-the-push", "listed-after"])
@pytest.mark.parametrize("flag", ["--assume-unchanged", "--skip-worktree"])
def test_a_file_git_was_told_not_to_look_at_keeps_its_local_changes(
    cli, remote, flag: str, ahead: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`update-index --assume-unchanged` / `--skip-worktree` hide a file's local edits from `git diff`, the
    usual way to keep a local tweak: git's own checkout still refuses to overwrite such a file, and so
    must michi, whether the file is the user's (changed upstream) or a task file michi changes; and
    whether the listing that finds them ran beside the push or after it."""
    monkeypatch.setattr(checkout, "_SETTLED_NS", 0 if ahead else 10**18)  # 10**18: never settled
    listed: list[bool] = []
    real = checkout._hidden_changes

    def spied(
        repo: mgit.Repo, paths: list[str], listing: str | None = None, added: tuple[str, ...] = ()
    ) -> str | None:
        listed.append(listing is not None)
        return real(repo, paths, listing, added)

    monkeypatch.setattr(checkout, "_hidden_changes", spied)
    repo = remote.clone("work")
    assert cli(repo, "init").exit_code == 0
    assert cli(repo, "task", "add", "one").exit_code == 0
    task_file = next((repo / ".tasks").glob("*/*.json")).relative_to(repo).as_posix()
    other = remote.clone("other")
    (other / "README.md").write_text("hello\nfrom upstream\n")
    git(other, "commit", "-qam", "upstream readme")
    git(other, "push", "-q", "origin", "main")
    for path, tweak in (("README.md", b"my local tweak\n"), (task_file, b"my local notes\n")):
        with open(repo / path, "ab") as f:
            f.write(tweak)
        git(repo, "update-index", flag, path)
    mine = {p: (repo / p).read_bytes() for p in ("README.md", task_file)}
    assert cli(repo, "task", "add", "two").exit_code == 0  # brings the upstream README change
    assert cli(repo, "task", "done", "1").exit_code == 0  # changes the task file
    assert {p: (repo / p).read_bytes() for p in mine} == mine
    assert git(remote.bare, "show", "main:README.md") == "hello\nfrom upstream"
    assert any(listed) is ahead  # the path under test was the one taken


def test_a_restore_started_ahead_moves_only_when_fed_and_keeps_work_staged_meanwhile(
    work: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Started beside the push, `restore` waits for its paths; the user stages a file meanwhile (git
    must not find the index locked), and the move, fed after, keeps it: git reads the index only then."""
    old, new = _next(work)
    repo, known = mgit.open_repo(work), _known(work, old, new)
    checkout.check_ahead(repo, old, known, new)
    (waiting,) = (p for k, p in repo.ahead.items() if k[0].startswith("restore"))
    (work / "staged.txt").write_text("staged while the push ran\n")
    git(work, "add", "staged.txt")
    assert waiting.proc.poll() is None  # still waiting for its paths: nothing moved yet
    assert (work / ".tasks" / "c.json").exists()
    runs = _exec_runs(monkeypatch, "restore")
    assert move_paths(repo, old, new, known) == (True, None)
    assert runs == []  # the one started ahead did the move
    assert waiting.proc.returncode == 0
    assert (work / ".tasks" / "b.json").read_text() == "b 2\n"
    assert not (work / ".tasks" / "c.json").exists()
    assert git(work, "diff-index", "--cached", "--name-only", new).split() == ["staged.txt"]


def test_a_restore_started_ahead_and_never_fed_changes_nothing(work: Path) -> None:
    old, new = _next(work)
    repo = mgit.open_repo(work)
    before = _state(work)
    checkout.check_ahead(repo, old, _known(work, old, new), new)
    (waiting,) = (p for k, p in repo.ahead.items() if k[0].startswith("restore"))
    mgit.drop_prepared(repo)
    mgit.tidy()  # it is reaped once the lock is let go
    assert waiting.proc.returncode not in (None, 0)  # git refused: no path to restore
    assert _state(work) == before


def _blocked_git(repo: mgit.Repo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every `restore` `repo` starts from now on blocks at its start, opening its trace file (a FIFO
    nobody reads), until the test opens the FIFO: a git still at work when michi drops it."""
    fifo = tmp_path / "trace.fifo"
    os.mkfifo(fifo)
    real = repo.start

    def start(args: list[str], env: dict[str, str] | None = None, fed: bool = False) -> object:
        if "restore" in args:
            env = {**(env or {}), "GIT_TRACE2": str(fifo)}
        return real(args, env=env, fed=fed)

    monkeypatch.setattr(repo, "start", start)
    return fifo


def _dropped_without_waiting(repo: mgit.Repo, fifo: Path) -> bool:
    """Drop what `repo` started ahead while its gits are held at their start (`_blocked_git`): did
    dropping return without them? Then let them go on (their trace gets a reader; a trace is a few KB,
    within the pipe's buffer) and reap them (`tidy`)."""
    dropped = threading.Thread(target=mgit.drop_prepared, args=(repo,), daemon=True)
    dropped.start()
    dropped.join(timeout=30)
    waited = dropped.is_alive()
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    try:
        dropped.join()
        mgit.tidy()
    finally:
        os.close(reader)
    return not waited


def test_dropping_a_process_started_ahead_does_not_wait_for_it(
    work: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A push refused: the `restore` and `update-ref` started beside it are dropped inside the lock. They
    change nothing unfed, so the lock's holder does not wait for them to exit (on a busy machine that
    was up to 200 ms inside the lock); they are reaped once it is let go (`tidy`)."""
    _old, new = _next(work)
    repo = mgit.open_repo(work)
    before = _state(work)
    fifo = _blocked_git(repo, tmp_path, monkeypatch)
    prepared.prepare(repo, ("restore", new, ".tasks/b.json"), ["restore", "--pathspec-from-file=-"])
    (waiting,) = repo.ahead.values()
    assert _dropped_without_waiting(repo, fifo), "dropping waited for the process"
    assert waiting.proc.returncode not in (None, 0)
    assert _state(work) == before


def test_an_update_ref_started_ahead_moves_the_branch_only_when_fed(work: Path) -> None:
    old, new = _next(work)
    repo = mgit.open_repo(work)
    mgit.prepare_update_ref(repo, "refs/heads/side", new, None, "test")
    mgit.drop_prepared(repo)  # never fed: no branch
    assert git(work, "branch", "--list", "side") == ""
    mgit.prepare_update_ref(repo, "refs/heads/main", new, new, "test")  # fed with a stale old value:
    with pytest.raises(mgit_errors.GitFailed):
        mgit.update_ref(repo, "refs/heads/main", new, new, "test")  # compare-and-swap still holds
    assert git(work, "rev-parse", "main").strip() == old
    mgit.prepare_update_ref(repo, "refs/heads/main", new, old, "test")
    (waiting,) = repo.ahead.values()
    mgit.update_ref(repo, "refs/heads/main", new, old, "test")
    assert waiting.proc.returncode == 0  # the one started ahead did it
    assert git(work, "rev-parse", "main").strip() == new
    assert repo.ahead == {}


def test_a_git_refusing_the_options_of_a_process_started_ahead_moves_as_before(work: Path) -> None:
    """A git older than `--pathspec-from-file` stops with a usage error (129) before doing anything: the
    move runs its own `restore`, as without the process started ahead."""
    old, new = _next(work)
    repo, known = mgit.open_repo(work), _known(work, old, new)
    specs = sorted(p for p, (o, n) in known.items() if o != n)
    refusing = ["restore", "--no-such-option", "--pathspec-from-file=-"]
    prepared.prepare(repo, (checkout._kind(heldindex.copy_path(repo)), new, *specs), refusing)
    (waiting,) = repo.ahead.values()
    assert move_paths(repo, old, new, known) == (True, None)
    assert waiting.proc.returncode == prepared.USAGE
    assert (work / ".tasks" / "b.json").read_text() == "b 2\n"
    assert not (work / ".tasks" / "c.json").exists()


def test_a_sparse_checkout_gets_no_file_outside_its_patterns(cli, remote) -> None:
    """A user who checked out only part of the repository (`git sparse-checkout`) gets michi's commits
    on the branch and in the index, but no file outside the patterns in the work tree: as git's own
    checkout does, they stay skip-worktree entries."""
    repo = remote.clone("sparse")
    (repo / "src").mkdir()
    (repo / "src" / "a.c").write_text("int a;\n")
    git(repo, "add", "src")
    git(repo, "commit", "-qm", "src")
    git(repo, "push", "-q", "origin", "main")
    assert cli(repo, "init").exit_code == 0
    assert cli(repo, "task", "add", "one").exit_code == 0
    git(repo, "sparse-checkout", "set", "--no-cone", "/src/", "/README.md")
    assert not (repo / ".tasks").exists() and not (repo / ".michi").exists()
    assert cli(repo, "task", "add", "two").exit_code == 0
    assert cli(repo, "task", "done", "1").exit_code == 0
    assert git(repo, "rev-parse", "HEAD") == remote.head()
    assert sorted(os.listdir(repo)) == [".git", "README.md", "src"]
    listed = [line.split(" ", 1) for line in git(repo, "ls-files", "-t").splitlines()]
    outside = [path for tag, path in listed if not path.startswith("src/") and path != "README.md"]
    assert len(outside) == 6 and all(tag == "S" for tag, path in listed if path in outside), listed
    assert git(repo, "status", "--porcelain") == ""


def test_relative_git_places_of_the_caller_are_its_own(remote) -> None:
    """`GIT_DIR=../.git GIT_WORK_TREE=..` from a subfolder names this repository for the caller; michi
    runs git from the top of the work tree, where the same text names another place: read from the
    folder michi was started in, the change lands and the caller's staged and unstaged work stay."""
    from conftest import run_michi

    repo = remote.clone("work")
    assert run_michi(repo, "init").exit_code == 0
    (repo / "notes.txt").write_text("staged\n")
    git(repo, "add", "notes.txt")
    (repo / "notes.txt").write_text("staged\nand not\n")
    before = _state(repo)
    env = {"GIT_DIR": "../.git", "GIT_WORK_TREE": ".."}
    added = run_michi(repo / ".tasks", "--json", "task", "add", "from below", env=env)
    assert added.exit_code == 0, added.stdout + added.stderr
    assert added.json()["transaction"]["pushed"] is True
    listed = run_michi(repo / ".tasks", "--json", "task", "list", env=env)
    assert [t["description"] for t in listed.json()] == ["from below"]
    after = _state(repo)
    assert after[1]["notes.txt"] == before[1]["notes.txt"]
    assert "notes.txt" in git(repo, "diff", "--cached", "--name-only")


def test_a_relative_git_dir_is_read_from_the_folder_michi_acts_in(remote, tmp_path) -> None:
    """A git hook runs with `GIT_DIR=.git` (relative) in its own repository; `michi -C ../other` there
    acts on the other one, and git reads that `.git` from the `-C` folder, as `git -C` does: taken from
    where michi started, it named the hook's repository, whose objects lack the other's commits (exit 5)."""
    from conftest import run_michi

    here = remote.clone("here")
    other = remote.clone("other")
    assert run_michi(other, "init").exit_code == 0
    added = run_michi(here, "-C", "../other", "--json", "task", "add", "over there", env={"GIT_DIR": ".git"})
    assert added.exit_code == 0, added.stdout + added.stderr
    assert added.json()["transaction"]["pushed"] is True
    assert (other / ".git" / "michi").is_dir() and not (here / ".git" / "michi").exists()


@pytest.mark.parametrize("staged_from", ["0", "1048576"], ids=["staged move", "git restore"])
def test_a_hand_edit_staged_between_the_check_and_the_move_is_kept(
    work: Path, monkeypatch: pytest.MonkeyPatch, staged_from: str
) -> None:
    """The user stages an edit of a task file the move changes right after the checks found it clean and
    before the move writes: the move must keep it (refuse), as `git checkout` would, never overwrite it.
    With a staged move and with `git restore` alike: the lock is taken, and the checks run again on the
    index the user wrote."""
    monkeypatch.setenv("MICHI_STAGED_INDEX_BYTES", staged_from)
    old, new = _next(work)
    repo = mgit.open_repo(work)
    checkout.check_ahead(repo, old, _known(work, old, new), new)
    real = checkout._refusal
    calls = []

    def racing(*args: object) -> str | None:
        refused = real(*args)  # type: ignore[arg-type]
        calls.append(refused)
        if len(calls) == 1:
            assert refused is None  # clean when checked; staged by hand just after
            (work / ".tasks" / "b.json").write_text("staged by hand meanwhile\n")
            git(work, "add", ".tasks/b.json")
        return refused

    monkeypatch.setattr(checkout, "_refusal", racing)
    done, refused = move_paths(repo, old, new, _known(work, old, new))
    assert done and refused == "error: your staged changes to .tasks/b.json would be overwritten"
    assert len(calls) == 2
    assert git(work, "show", ":.tasks/b.json") == "staged by hand meanwhile"
    assert (work / ".tasks" / "b.json").read_text() == "staged by hand meanwhile\n"
    assert not (work / ".git" / "index.lock").exists()


def test_a_git_add_while_the_move_writes_fails_saying_so(work: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """From the move's last look at the index to its write, git's `index.lock` is held, as by git's own
    checkout: a `git add` meanwhile (of a task file the move changes, or of any other) fails and says
    why, and nothing the user had is lost; once the move is done the same `git add` works."""
    monkeypatch.setenv("MICHI_STAGED_INDEX_BYTES", "1048576")
    old, new = _next(work)
    (work / "notes.txt").write_text("mine, edited\n")
    repo = mgit.open_repo(work)
    real = checkout._restore
    tried: list[subprocess.CompletedProcess[str]] = []

    def racing(repo_: mgit.Repo, source: str, paths: list[str], index: Path | None = None) -> tuple[int, str]:
        if source == new:
            for path in ("notes.txt", ".tasks/b.json"):
                tried.append(subprocess.run(["git", "add", path], cwd=work, capture_output=True, text=True))
        return real(repo_, source, paths, index)

    monkeypatch.setattr(checkout, "_restore", racing)
    assert move_paths(repo, old, new, _known(work, old, new)) == (True, None)
    assert [t.returncode for t in tried] == [128, 128]
    assert all("index.lock" in t.stderr for t in tried), [t.stderr for t in tried]
    assert (work / ".tasks" / "b.json").read_text() == "b 2\n"
    assert git(work, "show", ":.tasks/b.json") == "b 2"
    assert (work / "notes.txt").read_text() == "mine, edited\n"
    assert git(work, "diff", "--name-only") == "notes.txt"
    assert not (work / ".git" / "index.lock").exists()
    git(work, "add", "notes.txt")
    assert git(work, "diff", "--cached", "--name-only", new) == "notes.txt"


def test_a_move_killed_holding_the_index_lock_leaves_it_to_the_next_move(work: Path) -> None:
    """A michi SIGKILLed while it holds git's `index.lock` for a move leaves the file; git then refuses
    every write of the index. The next move removes that very lock (its folder names it) and moves."""
    old, new = _next(work)
    script = (
        "import os, signal, sys\n"
        "from michi import git as mgit\n"
        "from michi.git import heldindex\n"
        "held = heldindex.take(mgit.open_repo(sys.argv[1]))\n"
        "assert held is not None\n"
        "os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    killed = subprocess.run([sys.executable, "-c", script, str(work)], capture_output=True, text=True)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    assert (work / ".git" / "index.lock").exists()
    refused = subprocess.run(["git", "add", "notes.txt"], cwd=work, capture_output=True, text=True)
    assert refused.returncode == 128 and "index.lock" in refused.stderr
    repo = mgit.open_repo(work)
    assert move_paths(repo, old, new, _known(work, old, new)) == (True, None)
    assert not (work / ".git" / "index.lock").exists()
    assert git(work, "show", ":.tasks/b.json") == "b 2"
    assert os.listdir(work / ".git" / "michi" / "stage") == []


@pytest.mark.parametrize("failing", ["restore", "install", "died"])
def test_a_held_move_that_fails_leaves_nothing_of_itself(
    work: Path, monkeypatch: pytest.MonkeyPatch, failing: str
) -> None:
    """The held move's `git restore` fails after writing files, or its index cannot be installed (a full
    disk), or git dies (SIGKILL) after writing the files and before its index, leaving the copy's lock:
    index and files go back to the old commit, the file it added included (the index never named it),
    and the lock is let go."""
    old, new = _next(work)
    (work / "notes.txt").write_text("mine, edited\n")
    before = _state(work)
    repo = mgit.open_repo(work)
    if failing == "install":

        def full(self: heldindex.Held) -> None:
            raise OSError(28, "No space left on device")

        monkeypatch.setattr(heldindex.Held, "install", full)
    elif failing == "died":
        real = checkout._restore

        def died(
            repo_: mgit.Repo, source: str, paths: list[str], index: Path | None = None
        ) -> tuple[int, str]:
            if source != new or index is None:
                return real(repo_, source, paths, index)
            elsewhere = index.with_name("elsewhere")  # the files written, the copy left as it was
            elsewhere.write_bytes(index.read_bytes())
            real(repo_, source, paths, elsewhere)
            Path(f"{index}.lock").write_text("")
            return -9, ""

        monkeypatch.setattr(checkout, "_restore", died)
    else:
        real = checkout._restore

        def failed(
            repo_: mgit.Repo, source: str, paths: list[str], index: Path | None = None
        ) -> tuple[int, str]:
            status, err = real(repo_, source, paths, index)
            return (1, "error: a file could not be written") if source == new else (status, err)

        monkeypatch.setattr(checkout, "_restore", failed)
    done, refused = move_paths(repo, old, new, _known(work, old, new))
    assert done and refused and ("error:" in refused or "exited -9" in refused)
    assert _state(work) == before
    assert git(work, "status", "--porcelain") == "M notes.txt"
    assert not (work / ".git" / "index.lock").exists()


def test_an_interrupt_while_the_lock_is_taken_lets_it_go(work: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Ctrl-C (or a termination) while the index is being copied under the lock: the lock is let go
    before the interrupt goes on, and git can write the index again."""
    repo = mgit.open_repo(work)

    def interrupted(*args: object) -> None:
        assert (work / ".git" / "index.lock").exists()
        raise KeyboardInterrupt

    monkeypatch.setattr(heldindex.shutil, "copyfileobj", interrupted)
    with pytest.raises(KeyboardInterrupt):
        heldindex.take(repo)
    assert not (work / ".git" / "index.lock").exists()
    git(work, "add", "notes.txt")


def test_a_lock_let_go_while_the_move_waits_lets_the_move_go_on(
    work: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another git holds `index.lock` when the move wants it (a `git status` refreshing the index) and
    lets it go while the move waits: the move takes it then and moves."""
    old, new = _next(work)
    lock = work / ".git" / "index.lock"
    lock.write_text("")
    waits = []

    def other_git_done(seconds: float) -> None:
        waits.append(seconds)
        lock.unlink()

    monkeypatch.setattr(heldindex.time, "sleep", other_git_done)
    repo = mgit.open_repo(work)
    assert move_paths(repo, old, new, _known(work, old, new)) == (True, None)
    assert len(waits) == 1
    assert git(work, "show", ":.tasks/b.json") == "b 2" and not lock.exists()


def test_a_lock_another_git_holds_stops_the_move_before_it_writes(work: Path) -> None:
    """Another git holds `index.lock` for longer than the move waits: the move fails saying which file is
    in its way and how to go on, and has changed nothing."""
    old, new = _next(work)
    (work / ".git" / "index.lock").write_text("")
    before = _state(work)
    repo = mgit.open_repo(work)
    with pytest.raises(mgit_errors.GitFailed) as failed:
        move_paths(repo, old, new, _known(work, old, new))
    assert failed.value.code == "git_lock_held" and "index.lock" in str(failed.value)
    assert _state(work) == before
    assert (work / ".git" / "index.lock").read_text() == ""


def _conflicted(work: Path, path: str) -> None:
    oid = git(work, "rev-parse", f"HEAD:{path}").strip()
    lines = f"0 {'0' * len(oid)}\t{path}\n" + "".join(f"100644 {oid} {n}\t{path}\n" for n in (1, 2, 3))
    subprocess.run(["git", "update-index", "--index-info"], cwd=work, input=lines, text=True, check=True)


def _edited_in_gits_tick(work: Path, text: str, index_after_ns: int) -> None:
    """b.json rewritten to `text` with its index entry given the new file's very stat data, as when the
    edit lands in the same clock tick as git's stat of the file; the index written `index_after_ns` after
    the file."""
    path = work / ".tasks" / "b.json"
    second = os.stat(work / ".git" / "index").st_mtime_ns // 10**9 * 10**9  # the others settled before
    path.write_text(text)
    os.utime(path, ns=(second + 100_000_000, second + 100_000_000))
    st = os.stat(path)
    index = work / ".git" / "index"
    data = bytearray(index.read_bytes())
    name = b".tasks/b.json"
    oid = bytes.fromhex(git(work, "rev-parse", ":.tasks/b.json").strip())
    start = data.index(oid + len(name).to_bytes(2, "big") + name + b"\0") - 40
    fields = (*divmod(st.st_ctime_ns, 10**9), *divmod(st.st_mtime_ns, 10**9))
    fields += (st.st_dev, st.st_ino, 0o100644, st.st_uid, st.st_gid, st.st_size)
    struct.pack_into(">10I", data, start, *(v & 0xFFFFFFFF for v in fields))
    data[-20:] = hashlib.sha1(data[:-20]).digest()
    (work / ".git" / "index.new").write_bytes(data)
    then = second + 100_000_000 + index_after_ns
    os.utime(work / ".git" / "index.new", ns=(then, then))
    os.rename(work / ".git" / "index.new", index)


_STATES = {
    "clean": lambda w: None,
    "edited, same size": lambda w: (w / ".tasks/b.json").write_text("b X\n"),
    "edited, longer": lambda w: (w / ".tasks/b.json").write_text("b 1 and more\n"),
    "touched": lambda w: os.utime(w / ".tasks/b.json"),
    "made executable": lambda w: os.chmod(w / ".tasks/b.json", 0o755),
    "deleted": lambda w: (w / ".tasks/c.json").unlink(),
    "replaced by a symlink": lambda w: (
        (w / ".tasks/b.json").unlink(),
        (w / ".tasks/b.json").symlink_to("a.json"),
    ),
    "staged": lambda w: ((w / ".tasks/b.json").write_text("b X\n"), git(w, "add", ".tasks/b.json")),
    "removed from the index": lambda w: git(w, "rm", "-q", "--cached", ".tasks/c.json"),
    "added path staged": lambda w: ((w / ".tasks/d.json").write_text("d\n"), git(w, "add", ".tasks/d.json")),
    "added path intent-to-add": lambda w: (
        (w / ".tasks/d.json").write_text("d\n"),
        git(w, "add", "-N", ".tasks/d.json"),
    ),
    "assume-unchanged": lambda w: git(w, "update-index", "--assume-unchanged", ".tasks/b.json"),
    "skip-worktree": lambda w: git(w, "update-index", "--skip-worktree", ".tasks/b.json"),
    "conflicted": lambda w: _conflicted(w, ".tasks/b.json"),
    "index version 4": lambda w: git(w, "update-index", "--index-version", "4"),
    "split index, added path staged": lambda w: (
        (w / ".tasks/d.json").write_text("d\n"),
        git(w, "add", ".tasks/d.json"),
        git(w, "update-index", "--split-index"),
    ),
    "sparse checkout": lambda w: git(w, "sparse-checkout", "set", "--no-cone", "/.tasks/", "/notes.txt"),
    "racily clean": lambda w: (
        os.utime(w / ".tasks/b.json", ns=(2 * 10**18, 2 * 10**18)),  # newer than the index
        git(w, "update-index", "-q", "--refresh"),
    ),
    # Equal stat data prove nothing then; a git comparing times by the second (built without USE_NSEC, as
    # most are) reads the file and finds the edit.
    "racily clean within the second": lambda w: _edited_in_gits_tick(w, "b X\n", 400_000_000),
    # A size of 0 is git's mark of an entry it could not judge by stat data ("smudged"): unless its blob
    # is empty, git calls it changed, whatever the file.
    "emptied, size 0 in the index": lambda w: _edited_in_gits_tick(w, "", 1_400_000_000),
    "folder moved, a symlink to it in its place": lambda w: (
        (w / ".tasks").rename(w / "moved"),
        (w / ".tasks").symlink_to("moved"),
    ),
}


# Racily clean but unchanged: the read compares the file's bytes with its blob, as git does.
_CLEAN = {"clean", "racily clean"}


@pytest.mark.parametrize("lookup", ["searched", "walked"])
@pytest.mark.parametrize("state", list(_STATES))
def test_the_index_read_says_clean_only_where_git_does(
    work: Path, monkeypatch: pytest.MonkeyPatch, state: str, lookup: str
) -> None:
    """`_Read` stands in for git's `diff-index` and `ls-files -v`: where it says clean, git must too
    (nothing staged, nothing stat-dirty, nothing git was told not to look at); every other state (and a
    racily clean file, which git would have to read) is left to git. The same whether it searches the
    index for each path or walks its entries once (`michi.git.indexwalk`, for many paths)."""
    monkeypatch.setattr(checkout, "_SETTLED_NS", 0)
    monkeypatch.setattr(indexwalk, "WALK_FROM", 1 if lookup == "walked" else 1 << 30)
    old, new = _next(work)
    _settled(work)
    _STATES[state](work)
    known = _known(work, old, new)
    paths = sorted(known)
    read = checkout._Read.made(mgit.open_repo(work), paths, {p: known[p][0] for p in paths}, len(old) // 2)
    checked = git(work, "diff-index", "-z", "--name-only", old, "--", *paths, check=False)
    tags = {line.split(" ")[0] for line in git(work, "ls-files", "-v", "--", *paths).splitlines()}
    git_clean = checked == "" and tags <= {"H"}
    assert (read is not None) == (state in _CLEAN)
    assert read is None or git_clean


@pytest.mark.parametrize("kind", ["read", "git", "after"])
@pytest.mark.parametrize("where", ["the path", "inside it"])
def test_a_staged_file_gone_from_the_work_tree_where_the_move_adds_one_is_kept(
    work: Path, monkeypatch: pytest.MonkeyPatch, kind: str, where: str
) -> None:
    """A file staged where the move adds one (or inside a folder that becomes a file), then deleted from
    the work tree: `diff-index old` (tree against work tree) finds nothing and no untracked file is in
    the way, yet the index holds what `old` lacks; `git read-tree -m -u` refuses, and so must the move
    (`git restore --staged` would drop the staged file), whether checked beside the push (the index read
    or git's processes) or after it."""
    monkeypatch.setattr(checkout, "_SETTLED_NS", 0)
    if kind != "after":
        _kind_of_check(monkeypatch, kind)
    old, new = _next(work)
    _settled(work)
    mine = ".tasks/d.json" if where == "the path" else ".tasks/d.json/mine.txt"
    (work / mine).parent.mkdir(exist_ok=True)
    (work / mine).write_text("mine\n")
    git(work, "add", mine)
    (work / mine).unlink()
    repo, known = mgit.open_repo(work), _known(work, old, new)
    if kind != "after":
        checkout.check_ahead(repo, old, known)
    before = _state(work)
    done, refused = move_paths(repo, old, new, known)
    assert done and refused
    assert _state(work) == before
    assert git(work, "show", f":{mine}") == "mine"


@pytest.mark.parametrize("kind", ["read", "git"])
def test_a_task_folder_swapped_for_a_symlink_during_the_push_is_kept(
    work: Path, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    """The task folder moved away and a symlink to it put in its place after the check ahead answered:
    the files' stat data are unchanged (a folder's rename leaves its files alone), yet git sees them gone
    (a path through a symlink is not in the work tree) and its restore would replace the user's symlink
    by a folder holding only the moved file. As without the check ahead, the move must refuse."""
    monkeypatch.setattr(checkout, "_SETTLED_NS", 0)
    expected = _kind_of_check(monkeypatch, kind)
    old = git(work, "rev-parse", "HEAD").strip()
    new = _child_with_file(work, old, ".tasks/b.json", "b 2\n")
    _settled(work)
    repo = mgit.open_repo(work)
    known = {".tasks/b.json": (_entry(work, old, ".tasks/b.json"), _entry(work, new, ".tasks/b.json"))}
    checkout.check_ahead(repo, old, known)
    (ahead,) = repo.ahead.values()
    assert isinstance(ahead, expected)
    for proc in getattr(ahead, "procs", []):
        proc.wait()  # it has answered "clean" by now
    (work / ".tasks").rename(work / "moved")
    (work / ".tasks").symlink_to("moved")
    done, refused = move_paths(repo, old, new, known)
    assert done and refused
    assert (work / ".tasks").is_symlink()
    assert (work / "moved" / "b.json").read_text() == "b 1\n"


@pytest.mark.parametrize("staged", [True, False], ids=["staged-move", "git-restore"])
def test_after_michis_own_move_the_next_check_is_read_from_the_index(
    cli, remote, monkeypatch: pytest.MonkeyPatch, staged: bool
) -> None:
    """An agent's loop: each command's move leaves the files it wrote racily clean (written in the
    index's second, or after it for a staged move, which keeps the copied index's time). The next
    command's check still reads the index (comparing those files' bytes with their blobs) instead of
    running git's two processes beside its push."""
    monkeypatch.setattr(checkout, "_SETTLED_NS", 0)  # commands run back to back here
    monkeypatch.setenv("MICHI_STAGED_INDEX_BYTES", "0" if staged else str(1 << 40))
    kinds: list[str] = []
    real_read, real_ahead = checkout._Read.made, checkout._Ahead.__init__

    def read(cls: type, *args: object) -> object:
        found = real_read(*args)  # type: ignore[arg-type]
        kinds.append("read" if found is not None else "none")
        return found

    def ahead(self: object, *args: object) -> None:
        kinds.append("git")
        real_ahead(self, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(checkout._Read, "made", classmethod(read))
    monkeypatch.setattr(checkout._Ahead, "__init__", ahead)
    repo = remote.clone("work")
    assert cli(repo, "init").exit_code == 0
    for args in (("task", "add", "one"), ("task", "add", "two"), ("task", "done", "1"), ("task", "add", "3")):
        kinds.clear()
        assert cli(repo, *args).exit_code == 0
        if args != ("task", "add", "one"):
            assert kinds == ["read"], args
    assert git(repo, "status", "--porcelain") == ""
