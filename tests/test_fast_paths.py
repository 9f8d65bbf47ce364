"""The fast paths of ADR 0015 answer exactly what the slow ones they replace answered."""

from __future__ import annotations

import json
import random
import subprocess
from pathlib import Path

import pytest
from conftest import git

from michi.git import objects
from michi.git.pack import write_pack
from michi.git.repo import Repo
from michi.repo import find_repo
from michi.tasks import model, serialization
from michi.tasks.model import MAX_DEPTH


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
    assert objects.read_blobs(plain_repo, oids[:100]) == dict(zip(oids[:100], contents[:100], strict=True))


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
    for path in asked:
        assert plain_repo.cached_tree(tree) is not None
        assert objects.path_kind(plain_repo, tree, path) == fresh.kind(f"{tree}:{path}"), path
    assert fresh.cached_tree(tree) is None


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
