"""The fast paths of ADR 0015 answer exactly what the slow ones they replace answered."""

from __future__ import annotations

import json
import os
import random
import re
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import CliResult, git

from michi.errors import GitFailed
from michi.git import core, objects
from michi.git.pack import write_pack
from michi.git.repo import Repo
from michi.repo import find_repo
from michi.tasks import model, normal, serialization, viewtext
from michi.tasks.index import Index
from michi.tasks.model import MAX_DEPTH
from michi.tasks.query import compact, view_record


def _value(rng: random.Random, depth: int = 0) -> object:
    kind = rng.randint(0, 9 if depth < 4 else 5)
    if kind == 0:
        return rng.choice([None, True, False])
    if kind == 1:
        return rng.randint(-(10**20), 10**20)
    if kind == 2:
        return rng.choice([0.1, 1e300, -0.0, 3.0, 1.5e-7, float("nan"), float("inf"), -float("inf")])
    if kind in (3, 4, 5):
        return "".join(
            rng.choice('ab"\\\n\t\x00\x1f\u00e9\u2028\U0001f600 ') for _ in range(rng.randint(0, 6))
        )
    if kind in (6, 7):
        return [_value(rng, depth + 1) for _ in range(rng.randint(0, 3))]
    return {"".join(rng.choice('xy"\n\u00e9') for _ in range(rng.randint(0, 3))): _value(rng, depth + 1)}


def test_task_files_are_written_as_json_dumps_with_indent_writes_them() -> None:
    rng = random.Random(7)
    for _ in range(3000):
        record = {str(i): _value(rng) for i in range(rng.randint(0, 6))}
        record["t"] = (1, "two", [])  # tuples are arrays
        want = (json.dumps(record, indent=2, ensure_ascii=False) + "\n").encode()
        assert serialization.dumps_record(record) == want, record
    odd_keys = {1: 2, False: 3, None: 4, 1.5: 5}
    assert serialization.dumps_record(odd_keys) == (json.dumps(odd_keys, indent=2) + "\n").encode()


def _strptime_says(text: str) -> bool:
    try:
        model.parse_tw_date(text)
    except ValueError:
        return False
    return True


def test_dates_are_checked_as_strptime_checks_them() -> None:
    rng = random.Random(1)
    odd = ["20240229T235959Z", "20230229T000000Z", "00000101T000000Z", "20231301T000000Z"]
    odd += ["20231231T240000Z", "20231231T236000Z", "20231231T235960Z", "20231231T235961Z"]
    odd += ["202301 5T000000Z", "20230101t000000z", "20230100T000000Z", "\uff12\uff10230101T000000Z"]
    odd += ["20231231T235962Z", "19000229T000000Z", "20000229T000000Z", "20230431T000000Z"]

    def some_date() -> str:
        y, mo, d, h, mi, s = (rng.randint(0, top) for top in (10000, 13, 32, 25, 61, 63))
        return f"{y:04d}{mo:02d}{d:02d}T{h:02d}{mi:02d}{s:02d}Z"

    for text in odd + [some_date() for _ in range(30000)]:
        assert model.is_tw_date(text) == (len(text) == 16 and _strptime_says(text)), text


@pytest.fixture
def plain_repo(tmp_path: Path) -> Repo:
    git(tmp_path, "init", "-q")
    return Repo(find_repo(tmp_path))


def test_many_blobs_go_into_one_pack_git_accepts(plain_repo: Repo) -> None:
    before = objects.read_blob(plain_repo, objects.write_blob(plain_repo, b"started the reader"))
    assert before == b"started the reader"  # the persistent cat-file runs before the pack exists
    contents = [b"task %d\n" % i * (i % 7) for i in range(300)] + [b"same"] * 3 + [bytes(range(256)) * 99]
    oids = objects.write_blobs(plain_repo, contents)
    hashed = subprocess.run(
        ["git", "hash-object", "--stdin"], input=contents[-1], capture_output=True, check=True
    ).stdout.decode()
    assert oids[-1] == hashed.strip()
    packs = list((Path(plain_repo.objects_dir) / "pack").glob("*.idx"))
    assert len(packs) == 1
    verified = git(Path(plain_repo.working_dir), "verify-pack", "-v", str(packs[0]))
    assert f"non delta: {len(set(contents))} objects" in verified  # each blob once, none a delta
    for oid, data in zip(oids, contents, strict=True):
        assert objects.read_blob(plain_repo, oid) == data
    streamed = dict(objects.iter_blobs(plain_repo, oids[:100]))
    assert streamed == dict(zip(oids[:100], contents[:100], strict=True))


def test_blobs_made_ahead_give_the_pack_and_oids_made_then(plain_repo: Repo, tmp_path: Path) -> None:
    """`pack.ahead` hashes and compresses blobs early (an import's next chunk, ADR 0015): the pack and
    the oids are byte for byte those made without it, and only a blob's own content finds its entry."""
    from michi.git import pack
    from michi.objectid import KNOWN_BLOBS, object_id

    contents = [b'{\n  "uuid": "u%d",\n  "michi_id": %d\n}\n' % (i, i) for i in range(100)]
    oids = write_pack(plain_repo, [(b"blob", c) for c in contents])
    folder = Path(plain_repo.objects_dir) / "pack"
    plain = {p.name: p.read_bytes() for p in folder.iterdir()}
    for p in folder.iterdir():
        p.unlink()
    pack.ahead([*contents[:60], b"a guess never made"])
    try:
        assert len(KNOWN_BLOBS) == 61 and [object_id(b"blob", c) for c in contents] == oids
        assert object_id(b"tree", contents[0]) != oids[0]  # a tree of the same bytes is another object
        assert write_pack(plain_repo, [(b"blob", c) for c in contents]) == oids
        assert {p.name: p.read_bytes() for p in folder.iterdir()} == plain
        pack.ahead(contents[60:])  # the next chunk's: the last chunk's are forgotten
        assert len(KNOWN_BLOBS) == 40
    finally:
        pack.forget_ahead()
    assert not KNOWN_BLOBS and not pack._DEFLATED


def test_a_pack_of_nothing_new_writes_no_file(plain_repo: Repo) -> None:
    assert write_pack(plain_repo, []) == []
    assert not list((Path(plain_repo.objects_dir) / "pack").glob("*.pack"))


def test_a_batch_writes_its_blobs_trees_and_commit_as_one_pack(plain_repo: Repo) -> None:
    work = Path(plain_repo.working_dir)
    files = {f".tasks/{i % 5}/t{i}.json": b"task %d\n" % i for i in range(100)}
    with plain_repo.batched():
        oids = objects.write_blobs(plain_repo, list(files.values()))
        changes = {p: (objects.BLOB_MODE, oid) for p, oid in zip(files, oids, strict=True)}
        tree = objects.edit_tree(plain_repo, None, changes)
        who = [b"author a <a@b> 1 +0000", b"committer a <a@b> 1 +0000"]
        commit = objects.write_commit(plain_repo, tree, [], who, b"m\n")
        assert objects.read_blob(plain_repo, oids[3]) == b"task 3\n"  # read back before it is written
        assert not list((Path(plain_repo.objects_dir) / "pack").glob("*.pack"))
    assert not [p for p in Path(plain_repo.objects_dir).iterdir() if len(p.name) == 2]  # nothing loose
    packs = list((Path(plain_repo.objects_dir) / "pack").glob("*.idx"))
    assert len(packs) == 1
    assert "non delta: 108 objects" in git(work, "verify-pack", "-v", str(packs[0]))  # 100 + 7 trees + 1
    git(work, "fsck", "--strict", "--no-dangling", commit)
    listed = git(work, "ls-tree", "-r", "--format=%(path) %(objectname)", commit).split("\n")
    wanted = sorted(f"{p} {o}" for p, o in zip(files, oids, strict=True))
    assert sorted(line for line in listed if line) == wanted


def test_a_failed_batch_writes_nothing(plain_repo: Repo) -> None:
    with pytest.raises(RuntimeError), plain_repo.batched():
        oids = objects.write_blobs(plain_repo, [b"x %d" % i for i in range(100)])
        tree = objects.edit_tree(plain_repo, None, {"a/b": (objects.BLOB_MODE, oids[0])})
        raise RuntimeError
    assert not list(Path(plain_repo.objects_dir).rglob("*.pack"))
    assert plain_repo.cat(oids[0]) is None and plain_repo.cat(tree) is None  # nor remembered


def test_a_path_kind_from_held_trees_is_what_git_says(plain_repo: Repo) -> None:
    blob = objects.write_blob(plain_repo, b"x")
    changes = {p: (objects.BLOB_MODE, blob) for p in (".tasks/ab/t.json", ".tasks/f", "top", "d/e/f")}
    changes["link"] = (0o120000, blob)
    tree = objects.edit_tree(plain_repo, None, changes)
    sub = objects.edit_tree(plain_repo, None, {"x": (objects.BLOB_MODE, blob)})
    gitlinks = {"mod": (0o160000, "1" * 40), "here": (0o160000, sub)}  # a submodule's commit, absent or not
    tree = objects.edit_tree(plain_repo, tree, gitlinks, strict=False)
    asked = [".tasks", ".tasks/ab", ".tasks/ab/t.json", ".tasks/f", ".tasks/f/x", ".tasks/no", "top", "d/e"]
    asked += ["link", "link/x", "mod", "mod/x", "here", "here/x", "no/where", "d/e/f/g"]
    fresh = Repo(find_repo(Path(plain_repo.working_dir)))  # holds no tree: asks cat-file

    def said(path: str) -> str | None:  # a submodule is one, whatever git makes of its object
        return "commit" if path in ("mod", "here") else fresh.kind(f"{tree}:{path}")

    for path in asked:
        assert plain_repo.cached_tree(tree) is not None
        assert objects.path_kind(plain_repo, tree, path) == said(path), path
    assert fresh.cached_tree(tree) is None
    cold = Repo(find_repo(Path(plain_repo.working_dir)))  # reads the trees on the way through --batch
    plain = [p for p in asked if p.split("/")[0] not in ("mod", "here")]
    for path in plain:
        assert objects.path_kind(cold, tree, path) == said(path), path
    assert cold.cached_tree(tree) is not None
    assert sorted(cold._cat_files) == ["--batch"]  # no `--batch-check` of its own (ADR 0016)
    for path in asked:  # a submodule: "commit"; a path under one: git says what it makes of it
        assert objects.path_kind(cold, tree, path) == said(path), path


def test_an_edit_remembered_is_the_diff_git_makes(plain_repo: Repo) -> None:
    """The transaction tells the repository what its tree edit changed; `diff_trees` then answers without
    `diff-tree` (ADR 0015), and must answer what git would: random writes (new, same, changed content, a
    new mode), deletions (of files there or not) and emptied folders."""
    rng = random.Random(5)
    blobs = [objects.write_blob(plain_repo, b"v%d" % i) for i in range(4)]
    names = [f".tasks/{a}/{b}.json" for a in "xyz" for b in "abc"] + ["top", ".michi/ids"]
    tree = objects.edit_tree(plain_repo, None, {n: (objects.BLOB_MODE, blobs[0]) for n in names[::2]})
    fresh = Repo(find_repo(Path(plain_repo.working_dir)))  # remembers nothing: runs diff-tree
    for _ in range(40):
        changes: dict[str, tuple[int, str] | None] = {}
        for name in rng.sample(names, rng.randint(1, len(names))):
            mode = rng.choice([objects.BLOB_MODE, objects.BLOB_MODE, 0o100755])
            changes[name] = None if rng.random() < 0.3 else (mode, rng.choice(blobs))
        seen: dict[str, tuple[int, str] | None] = {}
        new = objects.edit_tree(plain_repo, tree, changes, seen=seen)
        objects.remember_edit(plain_repo, tree, new, changes, seen)
        assert objects.diff_trees(plain_repo, tree, new) == objects.diff_trees(fresh, tree, new)
        assert plain_repo.known_diff(tree, new) is not None and fresh.known_diff(tree, new) is None
        tree = new


def _file_records(rng: random.Random) -> list[object]:
    """Task file records, good and bad in the ways `from_record` tells apart."""
    base = {
        "uuid": "00000000-0000-4000-8000-000000000001",
        "michi_id": 3,
        "description": "x",
        "status": "pending",
        "entry": "20240101T000000Z",
    }
    options: dict[str, list[object]] = {
        "michi_state": [None, "todo", "in_progress", "bogus", ""],
        "status": ["pending", "completed", "deleted", "waiting", "nope", None],
        "priority": [None, "H", "", "Z"],
        "project": [None, "", "p", 3],
        "tags": [None, [], ["a", "b"], "a", [1]],
        "depends": [None, [], ["z", "a"], [None]],
        "modified": [None, "", "20240102T000000Z", "yesterday"],
        "start": [None, "20240102T000000Z", 5],
        "annotations": [None, [], [{"entry": "20240102T000000Z", "description": "n", "x": 1}], [{"e": 1}]],
        "michi_assignee": [None, "agent-1", "bad agent!"],
        "michi_version": [None, 2, 0, "2", True],
        "michi_id": [3, 0, -1, 1.5, 10**12],
        "udaz": [None, "v", {"deep": [1, {"k": None}]}],
        "udaa": [None, 1.5, [[]]],
    }
    out: list[object] = [[], "text", None]
    for _ in range(3000):
        record = dict(base)
        for key, values in options.items():
            if rng.random() < 0.3:
                value = rng.choice(values)
                if value is None:
                    record.pop(key, None)
                else:
                    record[key] = value
        out.append(record)
    return out


def test_a_record_is_checked_and_normalised_as_through_a_task() -> None:
    for record in _file_records(random.Random(5)):
        try:
            want: object = serialization.to_record(serialization.from_record(record, "f"))
        except serialization.CorruptTask as exc:
            want = exc.message
        try:
            got: object = serialization.record_of(record, "f")
        except serialization.CorruptTask as exc:
            got = exc.message
        assert got == want, record
        if isinstance(got, dict):
            assert list(got) == list(want)  # type: ignore[arg-type]  # the same key order too


def _walked_too_deep(value: object, depth: int) -> bool:
    """The depth check as it was: every value stacked, containers judged by their level."""
    stack = [(value, depth)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict | list):
            if level > MAX_DEPTH:
                return True
            stack.extend((v, level + 1) for v in (item.values() if isinstance(item, dict) else item))
    return False


def test_a_task_made_ready_outside_the_lock_is_what_the_apply_function_makes() -> None:
    """`michi.tasks.ready` checks and dumps an import's new task with a stand-in id; with the real id put
    in, record, file and problem are those `create.import_tasks` makes of the item itself (ADR 0015)."""
    from michi.tasks import ready
    from michi.tasks.errors import CorruptTask
    from michi.tasks.model import MAX_ID

    rng = random.Random(11)
    records = [r for r in _file_records(rng) if isinstance(r, dict)]
    for uuid in ('a"b\nc', "\u00e9\U0001f600", "x\\", " "):  # escapes before the id in the file
        records.append({**records[0], "uuid": uuid, "udaa": "after"})
    made_files = 0
    for record in records:
        made = ready.make(record)
        assert made is not None
        for ident in (1, 7, 12_345, MAX_ID):
            applied = {**record, "michi_id": ident, "michi_version": 1}
            try:
                final = serialization.record_of(applied, f"import {record['uuid']}")
            except CorruptTask as exc:
                assert made.problem == exc.message and made.record is None
                continue
            assert made.problem is None and made.record is not None
            assert {**made.record, "michi_id": ident} == final
            assert list({**made.record, "michi_id": ident}) == list(final)  # the file's key order
            assert made.head + b"%d" % ident + made.tail == serialization.dumps_record(final)
            made_files += 1
    assert made_files > 1000  # most records make a file; the rest are refused alike


def test_a_chunk_made_ready_on_two_cores_is_what_one_makes(monkeypatch) -> None:
    """The first chunk is made ready half in a forked child (`twocore`, ADR 0015): each item's Ready is
    what `make` gives it here, and the files guessed ahead are the same."""
    from michi.tasks import ready, twocore

    rng = random.Random(5)
    records = [r for r in _file_records(rng) if isinstance(r, dict)][:400]
    items = [{"record": r, "domain": "."} for r in records]
    forks: list[int] = []
    real_fork = os.fork
    monkeypatch.setattr(twocore, "FROM", 2)
    monkeypatch.setattr(twocore.os, "fork", lambda: forks.append(1) or real_fork())
    try:
        ready.expect(7)
        files = ready.prepare(items)
        assert forks, "no child was forked"
        for item in items:
            assert ready.take(item) == ready.make(item["record"])
        monkeypatch.setattr(twocore, "FROM", 10**9)
        ready.expect(7)
        assert ready.prepare(items) == files and len(files) > 100
    finally:
        ready.forget()


def test_a_ready_task_is_used_only_for_the_item_it_was_made_from() -> None:
    from michi.tasks import ready

    item = {"record": {"uuid": "u", "description": "d", "status": "pending", "entry": "20240101T000000Z"}}
    twin = {"record": dict(item["record"])}  # equal, but another object (a journal replay's)
    ready.prepare([item])
    try:
        assert ready.take(twin) is None
        found = ready.take(item)
        assert found is not None and found.record is not None and found.record["uuid"] == "u"
        assert ready.take(item) is None  # once
    finally:
        ready.forget()


def test_the_depth_check_answers_as_the_full_walk_did() -> None:
    rng = random.Random(3)

    def nested(depth: int) -> object:
        if depth > 20 or rng.random() < 0.3:
            return rng.choice([1, "x", None])
        if rng.random() < 0.5:
            return [nested(depth + 1) for _ in range(rng.randint(0, 2))]
        return {str(i): nested(depth + 1) for i in range(rng.randint(0, 2))}

    for _ in range(5000):
        value = nested(0)
        for depth in (0, 1, 5):
            assert serialization.too_deep(value, depth) == _walked_too_deep(value, depth), value
    hostile: list[object] = []
    inner = hostile
    for _ in range(100_000):  # far past the interpreter's stack: the check stops at the cap
        inner.append([])
        inner = inner[0]  # type: ignore[assignment]
    assert serialization.too_deep({"x": hostile}, 1)


def test_a_task_view_is_encoded_as_json_dumps_encodes_it() -> None:
    from michi.tasks.query import compact

    rng = random.Random(3)
    texts = ["", "plain", 'ünï \u2028 \ud800 "q" \\ \n\t', "\x00\x1f"]
    for _ in range(2000):
        value = {
            "id": rng.randint(1, 10**9),
            "description": rng.choice(texts) + str(rng.random()),
            "urgency": rng.choice([0.0, -1.5, 1e300, rng.random(), float("inf"), float("nan")]),
            "tags": [rng.choice(texts) for _ in range(rng.randint(0, 3))],
            "depends": [rng.randint(1, 9), "u"],
            "priority": rng.choice([None, "H"]),
            "flag": rng.choice([True, False]),
            "annotations": [{"entry": "20240101T000000Z", "description": rng.choice(texts)}],
        }
        assert compact(value) == json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _outcome(load: Callable[[bytes, str], dict[str, Any]], data: bytes, path: str) -> object:
    try:
        record = load(data, path)
    except serialization.CorruptTask as exc:
        return exc.message
    return list(record.items())  # the key order too


def _pretty(record: object) -> bytes:
    """The file michi would write; with escapes where a lone surrogate cannot be UTF-8."""
    try:
        return serialization.dumps_record(record) if isinstance(record, dict) else json.dumps(record).encode()
    except UnicodeEncodeError:
        return (json.dumps(record, indent=2) + "\n").encode()


def _file_bytes(rng: random.Random) -> list[bytes]:
    """Task files as michi writes them (normalised or not) and as people or tools might."""
    odd_dates = ["20230229T000000Z", "20240229T120000Z", "20231231T235961Z", "20231231T235962Z"]
    odd_dates += ["20231231T240000Z", "00000101T000000Z", "2023010 T000000Z", "\uff12\uff10230101T000000Z"]
    out: list[bytes] = []
    for record in _file_records(rng):
        if isinstance(record, dict):
            if rng.random() < 0.3:
                record[rng.choice(["entry", "modified", "michi_claim_expires", "end"])] = rng.choice(
                    odd_dates
                )
            if rng.random() < 0.1:
                record["description"] = rng.choice(["é \u2028 \ud800", "<<<<<<< x", "a\n=======\nb", ""])
            if rng.random() < 0.1:
                record["annotations"] = [{"description": "d", "entry": "20240102T000000Z"}]
            try:
                normal_form = serialization.record_of(record, "f")
            except serialization.CorruptTask:
                normal_form = None
            if normal_form is not None:
                out.append(_pretty(normal_form))
                items = list(normal_form.items())
                rng.shuffle(items)  # the same record, keys in another order
                out.append(_pretty(dict(items)))
        text = _pretty(record)
        out.append(text)
        out.append(rng.choice([b" ", b"\xef\xbb\xbf", b""]) + text + rng.choice([b"", b" \r\n", b"x", b"{}"]))
        out.append(json.dumps(record, separators=(",", ":")).encode())
    return [*out, b"", b"{", b'{"a": NaN}', b"[" * 100_000, b'{"uuid": 1e400}', b"\xff{}"]


_FULL = {
    "uuid": "00000000-0000-4000-8000-000000000001",
    "michi_id": 3,
    "description": "x",
    "status": "pending",
    "michi_state": "in_progress",
    "priority": "M",
    "project": "p",
    "tags": ["b", "a"],
    "depends": ["a", "b"],
    "entry": "20240101T000000Z",
    "modified": "20240102T000000Z",
    "start": "20240103T000000Z",
    "end": "20240104T000000Z",
    "annotations": [{"entry": "20240101T000000Z", "description": "n"}],
    "michi_assignee": "agent-1",
    "michi_claim_expires": "20240105T000000Z",
    "michi_version": 2,
    "due": "20240106T000000Z",
    "udb": 1.5,
    "udc": None,
}
_DROP = object()
# One change each to a file in normal form: valid or not, normal form or not.
_CHANGES: list[tuple[str, object]] = [
    ("depends", ["b", "a"]),
    ("depends", ["a", "a"]),
    ("depends", []),
    ("depends", ["a", 1]),
    ("tags", []),
    ("tags", ["a", None]),
    ("tags", "a"),
    ("annotations", [{"entry": "x", "description": "n", "more": 1}]),
    ("annotations", [{"description": "n", "entry": "x"}]),
    ("annotations", [{"entry": 1, "description": "n"}]),
    ("annotations", [{"entry": "", "description": ""}]),
    ("annotations", []),
    ("annotations", ["n"]),
    ("michi_assignee", " agent"),
    ("michi_assignee", "a\x00b"),
    ("michi_assignee", ""),
    ("michi_assignee", 5),
    ("michi_assignee", "ünï"),
    ("michi_version", 0),
    ("michi_version", 10**9),
    ("michi_version", 999_999_999),
    ("michi_version", True),
    ("michi_version", 2.0),
    ("michi_version", _DROP),
    ("michi_id", True),
    ("michi_id", 1.0),
    ("michi_id", 0),
    ("michi_id", 999_999_999),
    ("michi_id", 10**9),
    ("michi_state", _DROP),
    ("michi_state", "done"),
    ("michi_state", "bogus"),
    ("michi_state", ""),
    ("status", "waiting"),
    ("status", "nope"),
    ("status", ["pending"]),
    ("priority", "X"),
    ("priority", ""),
    ("priority", None),
    ("project", ""),
    ("project", None),
    ("project", 1),
    ("modified", _DROP),
    ("modified", ""),
    ("start", None),
    ("start", ""),
    ("end", "20230229T000000Z"),
    ("end", "20240229T000000Z"),
    ("entry", "20231231T235961Z"),
    ("entry", "20231231T235962Z"),
    ("entry", "20231231T240000Z"),
    ("entry", "00000101T000000Z"),
    ("entry", "20230431T000000Z"),
    ("entry", "\uff12\uff10230101T000000Z"),
    ("michi_claim_expires", "20240105T000000z"),
    ("description", ""),
    ("description", "<<<<<<< HEAD"),
    ("description", "a\n=======\nb"),
    ("description", ">>>>>>> x"),
    ("description", "a <= b == c >> d <<<<<<<x ======="),  # a marker's bytes, no marker: the fast way
    ("description", 'é \u2028 \ud800 "\\'),
    ("uuid", "00000000-0000-4000-8000-000000000002"),
    ("uuid", ""),
    ("udb", {"x": [1]}),
    ("udb", [[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]),
    ("uda", "before udb"),
    ("zzz", "last"),
    ("udc", ""),
    ("description", "x" * (1024 * 1024)),
]


def _changed_files(full: dict[str, object] = _FULL) -> list[bytes]:
    out: list[bytes] = []
    for key, value in [("", None), *_CHANGES]:
        record = dict(full)
        if value is _DROP:
            del record[key]
        elif key:
            record[key] = value
        if key in ("uda", "zzz"):
            record = dict(sorted(record.items(), key=lambda kv: kv[0] != "uda"))  # extra key first
        if key == "zzz":
            record["udb"] = record.pop("udb", 1)  # extra keys out of order, after the known ones
        out += [_pretty(record), json.dumps(record).encode(), _pretty(dict(reversed(record.items())))]
    return out


# What most files hold: no annotations, no extra keys (the layout `normal` reads by one match).
_PLAIN = {k: v for k, v in _FULL.items() if k in serialization.KNOWN and k != "annotations"}


def test_a_file_in_normal_form_is_read_as_the_full_checks_read_it() -> None:
    uuid = "00000000-0000-4000-8000-000000000001"
    paths = [f".tasks/00/{uuid}.json", f"d/.tasks/{uuid}.json", f"{uuid}.json", f".tasks/00/x{uuid}.json"]
    fast = 0
    for data in _changed_files() + _changed_files(_PLAIN) + _file_bytes(random.Random(11)):
        taken = normal.fast(data)
        if taken is not None:
            fast += 1
            # known keys interned as `to_record`'s are: the index cache is as small and quick to load
            notes = [key for note in taken.get("annotations", []) for key in note]
            known = [key for key in taken if key in serialization.KNOWN]
            assert all(key is sys.intern(key) for key in known + notes)
        for path in paths:
            assert _outcome(normal.loads_record, data, path) == _outcome(
                serialization.loads_record, data, path
            )
    assert fast > 300  # the fast path was taken, not only the full one


def test_a_file_in_michi_s_layout_is_read_by_one_match_as_the_decoder_reads_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    files = _changed_files(_PLAIN) + _file_bytes(random.Random(12))
    optional = (
        "priority",
        "project",
        "tags",
        "depends",
        "start",
        "end",
        "michi_assignee",
        "michi_claim_expires",
    )
    for n in range(1 << len(optional)):  # each optional key there or not
        files.append(
            _pretty({k: v for k, v in _PLAIN.items() if k not in optional[:8] or n >> optional.index(k) & 1})
        )
    files += [f.replace(b"\n", b"\r\n") for f in files[:50]] + [f + b"\n\n" for f in files[:50]]
    laid = [normal._LAYOUT.fullmatch(f.decode("utf-8", "replace")) is not None for f in files]
    by_match = [normal.fast(f) for f in files]
    monkeypatch.setattr(normal, "_LAYOUT", re.compile("(?!)"))  # the decoder's way for every file
    decoded = [normal.fast(f) for f in files]
    for data, one, other in zip(files, by_match, decoded, strict=True):
        assert one == other, data
        if one is not None and other is not None:
            assert list(one) == list(other)  # keys in the same order
            assert [type(v) for v in one.values()] == [type(v) for v in other.values()]
            assert all(key is sys.intern(key) for key in one if key in serialization.KNOWN)
    assert sum(laid) > 300  # the one-match way was taken
    assert sum(1 for hit, got in zip(laid, by_match, strict=True) if hit and got is None) > 10  # and refused


def test_a_task_s_json_text_is_its_view_encoded() -> None:
    rng = random.Random(4)
    uuids = [f"00000000-0000-4000-8000-00000000000{n}" for n in range(3)]
    entries: dict[str, Any] = {}
    for n, uuid in enumerate(uuids):
        rec = {"uuid": uuid, "michi_id": n + 1, "description": "d", "status": "pending", "entry": "x"}
        entries[f"dom/.tasks/{uuid}.json"] = ("oid", rec, None)
    index = Index("tree", entries)
    texts = ["", "plain", 'ünï \u2028 \ud800 "q" \\ \n\t', "\x00\x1f", "<b>"]
    checked = 0
    for record in _file_records(rng):
        if not isinstance(record, dict):
            continue
        for key in ("description", "project", "michi_assignee", "start", "end", "michi_claim_expires"):
            if rng.random() < 0.3:
                record[key] = rng.choice([*texts, None, 5, True, ["x"]])
        if rng.random() < 0.3:
            record["depends"] = rng.sample([*uuids, "gone", 7], rng.randint(0, 3))
        if rng.random() < 0.2:
            record["annotations"] = [{"entry": rng.choice(texts), "description": rng.choice(texts)}]
        if rng.random() < 0.2:
            record["michi_version"] = rng.choice([1, True, 2.0, None])
        record.setdefault("michi_state", rng.choice(["todo", None, 3]))
        for path in (f".tasks/ab/{record['uuid']}.json", f"a/b/.tasks/{record['uuid']}.json"):
            try:
                want: object = compact(view_record(record, path, index))
            except (TypeError, KeyError) as exc:
                want = type(exc)
            try:
                got: object = viewtext.text(record, path, index)
            except (TypeError, KeyError) as exc:
                got = type(exc)
            assert got == want, record
            checked += isinstance(want, str)
    assert checked > 1000


@pytest.mark.parametrize("block", [1 << 20, 5])
def test_task_files_in_a_listing_are_those_the_path_check_names(
    plain_repo: Repo, block: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Matched a block of git's output at a time (ADR 0015), whole records each: 5 bytes cut records
    and characters (`é`, a name that is not UTF-8) across blocks."""
    monkeypatch.setattr(core, "_BLOCK", block)
    root = Path(plain_repo.working_dir)
    names = [".tasks/a.json", ".tasks/ab/abc.json", ".tasks/ab/cd.json", ".tasks/AB/ABc.json"]
    names += [".tasks/ab/ab/abc.json", "x/.tasks/.json", ".tasks/0f/0f.json", "a/b/.tasks/0f/0fz.json"]
    names += [".tasks/x.jsonx", ".tasks/y.json/z", ".tasks/ab/x/.tasks/y.json", "é/.tasks/ü.json"]
    names += ["a\tb/.tasks/x.json", ".tasksx/a.json", "x.tasks/a.json", ".tasks/a b.json", ".tasks/1/1a.json"]
    names += [".tasks/123/123.json", "a/.tasks/.tasks/b.json", ".tasks/ab/ab\nc.json"]
    for name in names:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(name)
    (root / ".tasks" / "link.json").symlink_to("a.json")
    git(root, "add", "-A")
    git(
        root,
        "commit",
        "-qm",
        "files",
        env={"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", **_committer()},
    )
    (root / os.fsdecode(b".tasks/\xff.json")).write_text("not UTF-8")
    git(root, "add", "-A")
    author = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", **_committer()}
    git(root, "commit", "-qm", "more", env=author)
    listed = objects.ls_task_files(plain_repo, "HEAD")
    out = subprocess.run(["git", "ls-tree", "-r", "-z", "--full-tree", "HEAD"], cwd=root, capture_output=True)
    raw = out.stdout.decode("utf-8", "surrogateescape").split("\0")
    # A symlink's blob at a task path is `<mode>:<oid>`: never read as a task (ADR 0006).
    want = {
        r.split("\t", 1)[1]: (oid if mode == "100644" else objects.odd_blob(int(mode, 8), oid))
        for r in raw
        if r
        for mode, oid in [(r.split(" ")[0], r.split(" ")[2].split("\t")[0])]
    }
    assert list(listed.items()) == [(p, o) for p, o in want.items() if objects._is_task_file(p)]
    assert listed[".tasks/link.json"].startswith("120000:")
    assert len(listed) == 13 and os.fsdecode(b".tasks/\xff.json") in listed
    with pytest.raises(GitFailed, match="git ls-tree failed"):
        objects.ls_task_files(plain_repo, "0" * 40)


def _committer() -> dict[str, str]:
    return {"GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}


def test_blobs_stream_in_order_and_a_missing_one_is_an_error(plain_repo: Repo) -> None:
    threads = threading.active_count()
    contents = [b"blob %d\n" % i * i for i in range(500)]
    oids = objects.write_blobs(plain_repo, contents)
    order = oids[::-1] + oids[:3]
    assert list(objects.iter_blobs(plain_repo, order)) == [(o, contents[oids.index(o)]) for o in order]
    with pytest.raises(GitFailed, match="is missing"):
        list(objects.iter_blobs(plain_repo, [*oids, "0" * 40, *oids]))
    stream = objects.iter_blobs(plain_repo, oids * 200)  # 100,000: more than the pipes hold
    assert next(stream) == (oids[0], contents[0])
    stream.close()  # stopping early ends git and the feeding thread, without reading the rest
    assert threading.active_count() == threads


def test_a_blob_over_the_limit_is_cut_and_the_next_reads_whole(plain_repo: Repo) -> None:
    """Read with a limit, a larger blob gives its first `limit + 1` bytes (its reader calls it too large)
    and the rest is passed over: the persistent and the streaming cat-file both answer the next one."""
    big, small = b"x" * (1 << 20) + b"y", b"small\n"
    oids = objects.write_blobs(plain_repo, [big, small])
    assert plain_repo.read_object(oids[0], limit=10) == b"x" * 11
    assert plain_repo.read_object(oids[1], limit=10) == small
    assert plain_repo.read_object(oids[0]) == big
    many = [oids[i % 2] for i in range(40)]
    assert list(plain_repo.cat_stream(many, limit=10)) == [
        (o, b"x" * 11 if o == oids[0] else small) for o in many
    ]


def test_epochs_are_those_timegm_gives() -> None:
    import calendar

    from michi.tasks import urgency

    rng = random.Random(2)
    for _ in range(20000):
        y, mo, d, h, mi, s = (
            rng.randint(lo, hi) for lo, hi in ((1, 9999), (1, 12), (1, 28), (0, 23), (0, 59), (0, 61))
        )
        text = f"{y:04d}{mo:02d}{d:02d}T{h:02d}{mi:02d}{s:02d}Z"
        assert urgency.epoch(text) == float(calendar.timegm((y, mo, d, h, mi, s))), text


def test_tree_deltas_michi_remembers_are_what_git_diff_tree_says(
    repo: Path, cli: Callable[..., CliResult], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each transaction writes down how its tree differs from the one it built on; the next command
    reads that instead of running `git diff-tree`. It must be exactly git's answer."""
    from michi.git import deltas
    from michi.git.repo import open_repo

    assert cli(repo, "init").exit_code == 0
    for args in (["add", "one"], ["add", "two", "-p", "H"], ["start", "1"], ["done", "2"], ["add", "three"]):
        assert cli(repo, "--json", "task", *args).exit_code == 0
    git_repo = open_repo(repo)
    kept = deltas._load(git_repo)
    assert len(kept) >= 5
    for old, new, _ in kept:
        assert isinstance(old, str) and isinstance(new, str)
        assert deltas.recall_delta(git_repo, old, new) == objects.diff_trees(git_repo, old, new)
    trees = [str(kept[0][0])] + [str(k[1]) for k in kept]  # one chain: every command built on the last
    for i, old in enumerate(trees):
        for new in trees[i + 1 :]:  # over several transactions: each path's first and last entry
            assert deltas.recall_delta(git_repo, old, new) == objects.diff_trees(git_repo, old, new)
    old, new = trees[0], trees[-1]
    want = objects.diff_task_files(git_repo, str(old), str(new))
    monkeypatch.setattr(objects, "diff_trees", lambda *a: pytest.fail("git was asked"))
    assert objects.diff_task_files(git_repo, str(old), str(new)) == want != {}


@pytest.mark.parametrize("with_folders", [False, True])
def test_a_tree_is_in_gits_order_with_and_without_folders(plain_repo: Repo, with_folders: bool) -> None:
    """Names that sort differently as a folder (compared as "name/") and as a file: `git mktree` of the
    same entries gives the same tree (ADR 0015: a folder of files only is sorted by name alone)."""
    work = Path(plain_repo.working_dir)
    blob = objects.write_blob(plain_repo, b"x")
    names = ["a", "a.b", "a-b", "a0", "ab", "b", "a b", "A", "z.json", "\u00e9.json", "a.json"]
    changes: dict[str, tuple[int, str] | None] = {n: (objects.BLOB_MODE, blob) for n in names}
    changes["run.sh"] = (0o100755, blob)
    changes["link"] = (0o120000, blob)
    if with_folders:
        changes.pop("a")
        changes["a/inner"] = (objects.BLOB_MODE, blob)
        changes["a.b/x"] = (objects.BLOB_MODE, blob)
        changes["b"] = None
        changes["b/x"] = (objects.BLOB_MODE, blob)
    tree = objects.edit_tree(plain_repo, None, changes, strict=False)
    listed = subprocess.run(["git", "ls-tree", "-z", tree], cwd=work, capture_output=True, check=True).stdout
    again = subprocess.run(["git", "mktree", "-z"], cwd=work, input=listed, capture_output=True, check=True)
    assert again.stdout.decode().strip() == tree  # mktree sorts its input itself
    assert (b"040000 tree" in listed) == with_folders
    git(work, "fsck", "--strict", "--no-dangling", tree)
