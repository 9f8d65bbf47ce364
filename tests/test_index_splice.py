"""A staged checkout move whose moved entries are spliced into the index (`michi.git.splice`, ADR 0015):
git writes only those entries; the rest of the index is the user's, byte for byte. Checked with git
itself: the index it reads back is sorted and complete, `write-tree` gives the new commit's tree (the
cache tree was invalidated where it changed), the user's staged and unstaged work is kept. Where a
splice cannot be made exactly, the whole index is staged (or git's restore moves), as before."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from conftest import git
from test_checkout_paths import _exec_runs

from michi import git as mgit
from michi.git import checkout, indexwalk, objects, splice, staged
from michi.git.checkout import move_paths

FILES = {
    ".tasks/aa/1.json": "one\n",
    ".tasks/aa/3.json": "three\n",
    ".tasks/aa/5.json": "five\n",
    ".tasks/bb/7.json": "seven\n",
    "notes.txt": "mine\n",
}


@pytest.fixture(autouse=True, params=["searched", "walked"])
def _large(monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest) -> None:
    """Every test twice: the moved entries searched for one by one, and looked up in one walk of the
    index's entries (`michi.git.indexwalk`, as for a move of many paths)."""
    monkeypatch.setenv("MICHI_STAGED_INDEX_BYTES", "0")
    monkeypatch.setattr(checkout, "_SETTLED_NS", 0)
    monkeypatch.setattr(indexwalk, "WALK_FROM", 1 if request.param == "walked" else 1 << 30)


def _work(tmp_path: Path) -> Path:
    repo = tmp_path / "w"
    git(tmp_path, "init", "-q", "-b", "main", str(repo))
    for path, text in FILES.items():
        (repo / path).parent.mkdir(parents=True, exist_ok=True)
        (repo / path).write_text(text)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "one")  # a commit leaves the index with its cache tree
    return repo


def _commit(repo: Path, changes: dict[str, str | None]) -> tuple[str, str]:
    """A commit on HEAD with `changes` (path -> text, None: deleted), built without moving HEAD, index or
    files."""
    old = git(repo, "rev-parse", "HEAD")
    env = {"GIT_INDEX_FILE": str(repo / ".git" / "scratch-index")}
    git(repo, "read-tree", old, env=env)
    for path, text in changes.items():
        if text is None:
            git(repo, "update-index", "--force-remove", path, env=env)
            continue
        scratch = repo / ".git" / "scratch-blob"
        scratch.write_text(text)
        blob = git(repo, "hash-object", "-w", str(scratch))
        git(repo, "update-index", "--add", "--cacheinfo", f"100644,{blob},{path}", env=env)
    tree = git(repo, "write-tree", env=env)
    return old, git(repo, "commit-tree", tree, "-p", old, "-m", "two")


def _entry(repo: Path, commit: str, path: str) -> tuple[int, str] | None:
    listed = git(repo, "ls-tree", commit, "--", path).split()
    return (int(listed[0], 8), listed[2]) if listed else None


def _move(repo: Path, changes: dict[str, str | None]) -> tuple[staged.Staged | None, str]:
    """Stage the move to a commit with `changes`, then make it; the staging used (None: none), and the
    new commit."""
    old, new = _commit(repo, changes)
    known = {p: (_entry(repo, old, p), _entry(repo, new, p)) for p in changes}
    handle = mgit.open_repo(repo)
    checkout.check_ahead(handle, old, known, new)
    move = next((v for k, v in handle.ahead.items() if k[0] == "staged"), None)
    assert move_paths(handle, old, new, known) == (True, None)
    git(repo, "update-ref", "HEAD", new)
    return move, new


def _whole(repo: Path, new: str) -> None:
    """git reads the index back, sorted and complete; its trees are the new commit's; nothing differs."""
    assert git(repo, "write-tree") == git(repo, "rev-parse", f"{new}^{{tree}}")
    listed = git(repo, "ls-files", "-s").splitlines()
    assert listed == sorted(listed, key=lambda line: line.split("\t", 1)[1].encode())
    assert git(repo, "diff-index", "--cached", "--name-only", new) == ""
    assert git(repo, "diff-files", "--name-only") == ""


def test_entries_are_replaced_added_and_removed_in_place(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = _work(tmp_path)
    before = (repo / ".git" / "index").read_bytes()
    assert b"TREE" in before
    runs = _exec_runs(monkeypatch, "restore")
    changes = {
        ".tasks/aa/1.json": "one, done\n",  # replaced
        ".tasks/aa/2.json": "two\n",  # added between two of its folder
        ".tasks/aa/5.json": None,  # removed
        ".tasks/bb/8.json": "eight\n",  # added after its folder's last
    }
    move, new = _move(repo, changes)
    assert move is not None and move.spliced
    assert runs == []  # no git restore of the user's index
    _whole(repo, new)
    for path, text in changes.items():
        assert (repo / path).read_text() == text if text else not (repo / path).exists()
    assert (repo / "notes.txt").read_text() == "mine\n"


def test_the_users_staged_entries_and_edits_stay(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A file the user staged where the new entry's neighbours are (in git's order between the folder's
    previous file and the new one) keeps its entry, and the new one goes after it."""
    repo = _work(tmp_path)
    (repo / ".tasks" / "aa" / "1b.json").write_text("the user's\n")
    (repo / ".tasks" / "aa" / "4.json").write_text("the user's too\n")
    git(repo, "add", ".tasks/aa/1b.json", ".tasks/aa/4.json")
    (repo / "notes.txt").write_text("mine, edited\n")
    runs = _exec_runs(monkeypatch, "restore")
    move, new = _move(repo, {".tasks/aa/2.json": "two\n"})
    assert move is not None and move.spliced
    assert runs == []
    listed = git(repo, "ls-files", "-s").splitlines()
    names = [line.split("\t", 1)[1] for line in listed]
    assert names == sorted(names) and ".tasks/aa/1b.json" in names and ".tasks/aa/2.json" in names
    assert git(repo, "diff", "--cached", "--name-only", new).split() == [
        ".tasks/aa/1b.json",
        ".tasks/aa/4.json",
    ]
    assert git(repo, "diff-files", "--name-only") == "notes.txt"
    assert (repo / "notes.txt").read_text() == "mine, edited\n"


def test_attributes_along_the_path_stage_the_whole_index(tmp_path: Path) -> None:
    """git reads a file's attributes from the index first: a spliced move's index has none of them, so
    a `.gitattributes` along the moved paths (committed, or only in the work tree) means git writes a copy
    of the whole index, with its line endings applied."""
    repo = _work(tmp_path)
    (repo / ".gitattributes").write_text("*.json text eol=crlf\n")
    git(repo, "add", ".gitattributes")
    git(repo, "commit", "-qm", "attributes")
    move, new = _move(repo, {".tasks/aa/2.json": "two\n"})
    assert move is not None and not move.spliced
    assert (repo / ".tasks" / "aa" / "2.json").read_bytes() == b"two\r\n"
    _whole(repo, new)
    (repo / ".gitattributes").unlink()  # only in the index now: git still reads it from there
    move, new = _move(repo, {".tasks/aa/4.json": "four\n"})
    assert move is not None and not move.spliced
    assert (repo / ".tasks" / "aa" / "4.json").read_bytes() == b"four\r\n"
    (repo / ".tasks" / ".gitattributes").write_text("*.json -text\n")  # only in the work tree
    git(repo, "rm", "-q", "--cached", ".gitattributes")
    move, new = _move(repo, {".tasks/aa/6.json": "six\n"})
    assert move is not None and not move.spliced


def test_a_new_folder_or_a_folders_first_file_is_not_spliced(tmp_path: Path) -> None:
    repo = _work(tmp_path)
    for changes in ({".tasks/cc/9.json": "nine\n"}, {".tasks/aa/0.json": "zero\n"}):
        move, new = _move(repo, changes)
        assert move is not None and not move.spliced  # the whole index is staged instead
        _whole(repo, new)


@pytest.mark.parametrize("object_format", ["sha1", "sha256"])
def test_a_folders_files_are_read_as_git_lists_them(tmp_path: Path, object_format: str) -> None:
    """A new entry's neighbour comes from the trees michi reads itself (`objects.folder_files`), not from a
    `git ls-tree` of its own: the same blobs (plain, executable, symlink, a name that is not UTF-8), and no
    folder or submodule."""
    repo = tmp_path / "w"
    git(tmp_path, "init", "-q", "-b", "main", f"--object-format={object_format}", str(repo))
    folder = repo / ".tasks" / "aa"
    (folder / "sub").mkdir(parents=True)
    (folder / "sub" / "x.json").write_text("x\n")
    (folder / "1.json").write_text("one\n")
    (folder / "2.sh").write_text("#!/bin/sh\n")
    (folder / "2.sh").chmod(0o755)
    os.symlink("1.json", folder / "3.link")
    with open(os.fsencode(folder) + b"/\xff.json", "w") as odd:
        odd.write("odd\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "one")
    gitlink = f"160000,{git(repo, 'rev-parse', 'HEAD')},.tasks/aa/4-module"
    git(repo, "update-index", "--add", "--cacheinfo", gitlink)
    git(repo, "commit", "-qm", "a submodule")
    tree = git(repo, "rev-parse", "HEAD^{tree}")
    out = subprocess.run(
        ["git", "ls-tree", "-z", tree, "--", ".tasks/aa/"], cwd=repo, capture_output=True, check=True
    ).stdout
    records = [r.split(b"\t", 1) for r in out.split(b"\0") if r]
    listed = [
        (path.decode("utf-8", "surrogateescape"), meta.split()[2].decode())
        for meta, path in records
        if meta.split()[1] == b"blob"
    ]
    assert len(listed) == 4 and len(records) == 6  # the folder and the submodule are no blobs
    handle = mgit.open_repo(repo)
    assert sorted(objects.folder_files(handle, tree, ".tasks/aa") or []) == sorted(listed)
    for not_a_folder in (".tasks/cc", ".tasks/aa/1.json", ".tasks/aa/4-module", "nowhere/aa"):
        assert objects.folder_files(handle, tree, not_a_folder) is None


def test_a_folder_in_a_tree_git_would_not_write_is_read_as_git_reads_it(tmp_path: Path) -> None:
    """Trees written by another tool (`hash-object --literally`): a mode without a file type is a
    submodule to git, a folder's mode `40755` a folder; a mode git cannot read, an empty name or a name
    with a slash: no answer (the whole index is staged instead)."""
    repo = _work(tmp_path)
    blob = git(repo, "rev-parse", "HEAD:notes.txt")

    def tree(*entries: tuple[bytes, bytes, str]) -> str:
        raw = b"".join(mode + b" " + name + b"\0" + bytes.fromhex(oid) for mode, name, oid in entries)
        made = subprocess.run(
            ["git", "hash-object", "-t", "tree", "--literally", "-w", "--stdin"],
            cwd=repo,
            input=raw,
            capture_output=True,
            check=True,
        )
        return made.stdout.decode().strip()

    inner = tree((b"100644", b"a.json", blob), (b"644", b"b.json", blob), (b"100755", b"c.sh", blob))
    top = tree((b"40755", b"aa", inner))
    handle = mgit.open_repo(repo)
    listed = git(repo, "ls-tree", top, "--", "aa/").splitlines()
    assert [line.split("\t")[1] for line in listed if " blob " in line] == ["aa/a.json", "aa/c.sh"]
    assert objects.folder_files(handle, top, "aa") == [("aa/a.json", blob), ("aa/c.sh", blob)]
    unreadable = [(b"+100644", b"b.json"), (b"10a644", b"b.json"), (b"100644", b""), (b"100644", b"x/y")]
    for mode, name in unreadable:
        unread = tree((b"100644", b"a.json", blob), (mode, name, blob))
        assert objects.folder_files(handle, tree((b"40000", b"aa", unread)), "aa") is None, (mode, name)


def test_the_splice_refuses_what_it_cannot_read() -> None:
    width, oid = 20, "ab" * 20
    old = {".tasks/aa/1.json": (0o100644, oid)}
    new = {".tasks/aa/1.json": (0o100644, "cd" * 20)}
    for data in (
        b"",
        b"DIRC" + (3).to_bytes(4, "big") + bytes(4 + width),
        b"DIRC" + (2).to_bytes(4, "big") + bytes(4 + width),
    ):
        assert splice.plan(data, width, old, new, {}) is None  # too short, version 3, no cache tree
    assert splice.entries(b"DIRC" + (4).to_bytes(4, "big") + bytes(4 + width), width) is None


def test_a_conflicted_path_is_not_spliced(tmp_path: Path) -> None:
    repo = _work(tmp_path)
    data = bytearray((repo / ".git" / "index").read_bytes())
    oid = git(repo, "rev-parse", "HEAD:.tasks/aa/1.json")
    name = b".tasks/aa/1.json"
    at = data.find(bytes.fromhex(oid) + len(name).to_bytes(2, "big") + name)
    data[at + 20] |= 0x10  # stage 1: no stage-0 entry of that name
    old = {".tasks/aa/1.json": (0o100644, oid)}
    assert splice.plan(bytes(data), 20, old, {".tasks/aa/1.json": (0o100644, "cd" * 20)}, {}) is None


def test_sha256_repository(tmp_path: Path) -> None:
    repo = tmp_path / "w"
    git(tmp_path, "init", "-q", "-b", "main", "--object-format=sha256", str(repo))
    for path, text in FILES.items():
        (repo / path).parent.mkdir(parents=True, exist_ok=True)
        (repo / path).write_text(text)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "one")
    move, new = _move(repo, {".tasks/aa/2.json": "two\n", ".tasks/aa/3.json": "three, done\n"})
    assert move is not None and move.spliced
    _whole(repo, new)
    assert os.listdir(repo / ".git" / "michi" / "stage") in ([], [move.where.name])


@pytest.mark.parametrize("threads", ["2", "64"])
def test_an_index_with_an_entry_offset_table_is_not_spliced(tmp_path: Path, threads: str) -> None:
    """git writes its entry offset table (`IEOT`) before the cache tree when it records no end of the
    entries: its bytes are no entry, so such an index is staged whole. With more threads than entries,
    git writes a block for each entry: the table is as far back as it can be."""
    repo = _work(tmp_path)
    for key, value in (("index.threads", threads), ("index.recordEndOfIndexEntries", "false")):
        git(repo, "config", key, value)
    git(repo, "config", "index.recordOffsetTable", "true")
    (repo / "extra.txt").write_text("x\n")
    git(repo, "add", "extra.txt")
    git(repo, "commit", "-qm", "more")
    data = (repo / ".git" / "index").read_bytes()
    assert b"IEOT" in data
    move, new = _move(repo, {".tasks/bb/8.json": "eight\n"})
    assert move is not None and not move.spliced
    _whole(repo, new)
