"""One walk over git's index entries (`michi.git.indexwalk`, ADR 0015): a checkout move of many paths
looks each up there instead of searching the whole file for it twice. Checked against git's own index
files: the walk finds every entry where git wrote it, in git's order, and refuses what it cannot read
exactly (another version, an extended entry, a name too long for the flags, entries out of order, a cut
file), so that the callers search as before."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from conftest import git
from test_index_splice import _move, _whole, _work

from michi.git import checkout, indexfile, indexwalk, splice
from michi.git.indexfile import entry_key

NAMES = [
    "a-b",
    "a.b",
    "a/b",
    "a/c/d.json",
    "dir with space/x y.txt",
    "é/ü.json",
    ".tasks/0f/" + "1" * 36 + ".json",
    ".tasks/0f/" + "2" * 36 + ".json",
    ".tasks/10/" + "3" * 36 + ".json",
]


def _repo(tmp_path: Path) -> Path:
    repo = tmp_path / "w"
    git(tmp_path, "init", "-q", "-b", "main", str(repo))
    for name in NAMES:
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(name + "\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "one")  # the index gets its cache tree (`TREE`)
    return repo


def _index(repo: Path) -> bytes:
    return (repo / ".git" / "index").read_bytes()


def _listed(repo: Path) -> list[tuple[str, int, str]]:
    """(object id, stage, path) of each entry, in the index's order, as git lists them."""
    out = []
    for record in git(repo, "ls-files", "-s", "-z").split("\0"):
        if record:
            meta, path = record.split("\t", 1)
            _mode, oid, stage = meta.split()
            out.append((oid, int(stage), path))
    return out


def test_the_walk_finds_every_entry_where_git_wrote_it(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    data = _index(repo)
    walked = indexwalk.walk(data, 20)
    assert walked is not None
    listed = _listed(repo)
    assert walked.names == [p.encode() for _o, _s, p in listed]
    for (oid, _stage, path), start in zip(listed, walked.starts, strict=True):
        key = entry_key(oid, path.encode())
        assert data[start + 40 : start + 40 + len(key)] == key
    assert data[walked.end : walked.end + 4] == b"TREE"  # the entries end where the extensions begin
    # A bytearray (a spliced index) walks the same.
    again = indexwalk.walk(bytearray(data), 20)
    assert again is not None and again.names == walked.names and again.starts == walked.starts


def test_lookups_answer_as_the_index_holds(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    walked = indexwalk.walk(_index(repo), 20)
    assert walked is not None
    first = ".tasks/0f/" + "1" * 36 + ".json"
    assert walked.only(first.encode()) == walked.starts[walked.names.index(first.encode())]
    assert walked.only(b".tasks/0f") is None and walked.named(b"a/c/d.json")
    assert walked.inside(b"a") and walked.inside(b"a/c") and not walked.inside(b"a/b")
    assert not walked.inside(b"a-b") and not walked.named(b"a")
    # A new entry goes after another file of its folder, before the next entry in git's order.
    between = (".tasks/0f/" + "15" + "1" * 34 + ".json").encode()
    assert (
        walked.insertion_after_folder_file(between)
        == walked.starts[walked.names.index(b".tasks/0f/" + b"2" * 36 + b".json")]
    )
    last = "é/üz.json".encode()
    assert walked.insertion_after_folder_file(last) == walked.end
    assert walked.insertion_after_folder_file(first.encode()) is None  # already there
    assert walked.insertion_after_folder_file(b".tasks/0f/0.json") is None  # its folder's first
    assert walked.insertion_after_folder_file(b".tasks/11/x.json") is None  # a new folder
    assert walked.insertion_after_folder_file(b"top.txt") is None  # not in a folder


def test_an_absent_path_is_checked_alike_searched_or_walked(tmp_path: Path) -> None:
    """A path the move adds must have no entry of its name, and none inside it (a folder that becomes a
    file): searched for in the index's bytes, the answer is the walk's, for names that only begin alike."""
    repo = _repo(tmp_path)
    data = _index(repo)
    walked = indexwalk.walk(data, 20)
    assert walked is not None
    mtime = (repo / ".git" / "index").stat().st_mtime_ns
    for path, free in [
        ("a", False),  # a/b and a/c/d.json are inside it
        ("a/c", False),
        ("a/b", False),  # its own entry
        ("é", False),
        ("a-", True),  # only the start of a-b
        ("dir with space/x", True),  # only the start of "x y.txt"
        (".tasks/0f/" + "1" * 35, True),
        # Not there at all. Searched, a name is also found in the binary fields by chance, which counts
        # as an entry (doubt, and git moves instead): a name of one letter followed by a NUL or a slash
        # did in 13 of 300 fresh repositories, one of eleven letters in none.
        ("x-not-there", True),
    ]:
        for walk in (None, walked):
            answer = indexfile.unchanged(data, mtime, {path: None}, {}, lambda _p, _st: None, walk)
            assert answer is free, (path, walk is not None)


def test_a_conflicts_stages_are_no_single_entry(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    oid = git(repo, "rev-parse", "HEAD:a-b")
    staged = "".join(f"100644 {oid} {stage}\ta-b\n" for stage in (1, 2, 3))
    git(repo, "update-index", "--force-remove", "a-b")
    subprocess.run(["git", "update-index", "--index-info"], cwd=repo, input=staged, text=True, check=True)
    walked = indexwalk.walk(_index(repo), 20)
    assert walked is not None and walked.names.count(b"a-b") == 3
    assert walked.only(b"a-b") is None and walked.named(b"a-b")


def _swapped(data: bytes, walked: indexwalk.Entries, i: int, j: int) -> bytes:
    """`data` with entries i and j (of equal size, i < j) swapped: out of git's order."""
    size = walked.starts[i + 1] - walked.starts[i]
    a, b = walked.starts[i], walked.starts[j]
    assert walked.starts[j + 1] - b == size
    return data[:a] + data[b : b + size] + data[a + size : b] + data[a : a + size] + data[b + size :]


@pytest.mark.parametrize(
    "case",
    [
        "version 3, an intent to add",
        "version 4",
        "cut short",
        "out of order",
        "a name over 4,095 bytes",
        "an entry count too small",
    ],
)
def test_the_walk_refuses_what_it_cannot_read(tmp_path: Path, case: str) -> None:
    repo = _repo(tmp_path)
    if case == "version 3, an intent to add":
        (repo / "new.txt").write_text("new\n")
        git(repo, "add", "-N", "new.txt")  # an extended flag: the index is written as version 3
    elif case == "version 4":
        git(repo, "update-index", "--index-version", "4")
    elif case == "a name over 4,095 bytes":
        oid = git(repo, "rev-parse", "HEAD:a-b")
        long = "/".join(["d" * 200] * 20) + "/" + "f" * 94  # 4,114 bytes: git's flags hold only 0xFFF
        git(repo, "update-index", "--add", "--cacheinfo", f"100644,{oid},{long}")
    data = _index(repo)
    if case == "cut short":
        data = data[: len(data) // 2]
    elif case == "an entry count too small":  # the last entry's bytes would be taken for an extension
        data = data[:8] + (int.from_bytes(data[8:12], "big") - 1).to_bytes(4, "big") + data[12:]
    elif case == "out of order":
        walked = indexwalk.walk(data, 20)
        assert walked is not None
        first, second = (walked.names.index(f".tasks/0f/{c * 36}.json".encode()) for c in "12")
        data = _swapped(data, walked, first, second)
    assert indexwalk.walk(data, 20) is None


def test_a_move_of_many_paths_walks_the_index_once_and_searches_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The move's first check and its splice share one walk; no entry is searched for in the file."""
    monkeypatch.setenv("MICHI_STAGED_INDEX_BYTES", "0")
    monkeypatch.setattr(checkout, "_SETTLED_NS", 0)
    repo = _work(tmp_path)
    walks: list[int] = []
    real_walk = indexwalk.walk

    def walk(data: bytes | bytearray, width: int) -> indexwalk.Entries | None:
        walks.append(len(data))
        return real_walk(data, width)

    def searched(*args: object) -> None:
        raise AssertionError("an entry was searched for")

    monkeypatch.setattr(indexwalk, "walk", walk)
    for name in ("_found",):
        monkeypatch.setattr(indexfile, name, searched)
    for name in ("_find", "_insertion"):
        monkeypatch.setattr(splice, name, searched)
    changes: dict[str, str | None] = {f".tasks/aa/{n}.json": f"{n}\n" for n in (2, 4, 6, 8)}
    changes |= {".tasks/aa/1.json": "one, done\n", ".tasks/aa/5.json": None, ".tasks/bb/8.json": "eight\n"}
    assert len(changes) >= indexwalk.WALK_FROM
    move, new = _move(repo, changes)
    assert move is not None and move.spliced
    assert len(walks) == 1
    _whole(repo, new)
    for path, text in changes.items():
        assert (repo / path).read_text() == text if text else not (repo / path).exists()
    assert os.path.exists(repo / "notes.txt")
