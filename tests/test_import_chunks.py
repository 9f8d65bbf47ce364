"""A large import lands as a handful of commits, one transaction each, streamed from the file (ADR 0015)."""

from __future__ import annotations

import io
import json
import math
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import git, run_michi
from txnkit import michi_commits

from michi.commands import interop
from michi.errors import UsageError
from michi.tasks import twstream
from michi.workflow import txn


def _records(n: int) -> list[dict[str, object]]:
    return [
        {
            "uuid": f"00000000-0000-4000-8000-{i:012d}",
            "description": f"imported {i}",
            "status": "pending",
            "entry": "20240101T000000Z",
        }
        for i in range(1, n + 1)
    ]


def _uuids_on(bare: Path) -> list[str]:
    """The uuid of every task file on the remote's main (a uuid twice would be a duplicate task)."""
    names = git(bare, "ls-tree", "-r", "--name-only", "main").splitlines()
    return [n.rsplit("/", 1)[1][:-5] for n in names if n.endswith(".json") and "/.tasks/" in f"/{n}"]


def test_import_in_chunks_lands_every_task_once(cli, repo: Path, remote, monkeypatch) -> None:
    monkeypatch.setattr(interop, "IMPORT_CHUNK", 2)
    assert cli(repo, "init").exit_code == 0
    source = repo.parent / "tw.json"
    source.write_text(json.dumps(_records(5)))
    before = remote.head()
    result = cli(repo, "import", str(source), "--json")
    assert result.exit_code == 0, result.stdout
    body = result.json()
    assert sorted(body["added"]) == [1, 2, 3, 4, 5]
    assert len(body["tasks"]) == 5 and body["transaction"]["pushed"]
    commits = git(remote.bare, "rev-list", f"{before}..main").split()
    assert len(commits) == 3  # 2 + 2 + 1
    listed = cli(repo, "task", "list", "--json").json()
    assert sorted(t["id"] for t in listed) == [1, 2, 3, 4, 5]
    again = cli(repo, "import", str(source), "--json")  # nothing new: every chunk skips its tasks
    assert again.exit_code == 0 and sorted(again.json()["skipped"]) == [1, 2, 3, 4, 5]
    assert git(remote.bare, "rev-list", "--count", f"{before}..main") == "3"


@pytest.mark.parametrize(("count", "chunk"), [(7, 3), (9, 3), (1, 4)])
def test_n_tasks_land_in_ceil_n_over_chunk_commits(
    cli, repo: Path, remote, monkeypatch, count: int, chunk: int
) -> None:
    monkeypatch.setenv("MICHI_IMPORT_CHUNK", str(chunk))
    monkeypatch.setattr(txn, "_THIN_UP_TO", 2)  # pushed as a large import chunk is: whole, no delta search
    assert cli(repo, "init").exit_code == 0
    source = repo.parent / "tw.jsonl"  # one object per line, as `task export` writes without json.array
    source.write_text("\n".join(json.dumps(r) for r in _records(count)) + "\n")
    before = remote.head()
    result = cli(repo, "import", str(source), "--json")
    assert result.exit_code == 0, result.stdout
    assert git(remote.bare, "rev-list", "--count", f"{before}..main") == str(math.ceil(count / chunk))
    uuids = _uuids_on(remote.bare)
    assert sorted(uuids) == sorted(str(r["uuid"]) for r in _records(count))
    assert sorted(t["id"] for t in cli(repo, "task", "list", "--json").json()) == list(range(1, count + 1))
    # Blobs of a chunk are written as one pack: the repository still checks out whole.
    assert "error" not in git(repo, "fsck", "--no-dangling").lower()


@pytest.mark.parametrize("phase", ["committed", "pushed"])
def test_an_import_killed_between_chunks_resumes_without_duplicates(repo: Path, remote, phase: str) -> None:
    """SIGKILL in the first chunk's transaction (before or after its push); the import run again lands
    every task once: the journal finishes the killed chunk, the rerun skips what landed."""
    assert run_michi(repo, "init").exit_code == 0
    source = repo.parent / "tw.json"
    source.write_text(json.dumps(_records(5)))
    env = {"MICHI_IMPORT_CHUNK": "2"}
    killed = run_michi(repo, "import", str(source), "--json", env={**env, "MICHI_FAULT": phase})
    assert killed.exit_code == -signal.SIGKILL
    again = run_michi(repo, "import", str(source), "--json", env=env)
    assert again.exit_code == 0, again.stderr
    assert sorted(_uuids_on(remote.bare)) == sorted(str(r["uuid"]) for r in _records(5))
    imports = [m for _oid, m in michi_commits(remote.bare) if m.startswith("michi: import")]
    assert len(imports) == 3  # the killed chunk landed once, then the other two
    listed = run_michi(repo, "task", "list", "--json").json()
    assert sorted(t["id"] for t in listed) == [1, 2, 3, 4, 5]


def test_a_bad_task_late_in_the_file_stops_the_import_before_anything_lands(
    cli, repo: Path, remote, monkeypatch
) -> None:
    monkeypatch.setenv("MICHI_IMPORT_CHUNK", "2")
    assert cli(repo, "init").exit_code == 0
    source = repo.parent / "tw.json"
    source.write_text(json.dumps([*_records(5), {"description": "no uuid"}]))
    before = remote.head()
    result = cli(repo, "import", str(source), "--json")
    assert result.exit_code == 2 and result.json()["error"]["code"] == "usage"
    assert remote.head() == before


def test_an_import_from_stdin(repo: Path, remote) -> None:
    """stdin is read once: checked whole, then imported chunk by chunk from the spool of checked tasks."""
    assert run_michi(repo, "init").exit_code == 0
    proc = subprocess.run(
        [sys.executable, "-m", "michi", "import", "-", "--json"],
        cwd=repo,
        input=json.dumps(_records(3)),
        capture_output=True,
        text=True,
        env={**os.environ, "MICHI_IMPORT_CHUNK": "2"},
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert sorted(json.loads(proc.stdout)["added"]) == [1, 2, 3]


@pytest.mark.parametrize(
    "text",
    [
        "[{a},\n{b}]",
        "[\n{a},\n{b},\n]\n",
        "{a}\n{b}\n",
        "{a},\n{b},\n",
        "  {a} {b}",
    ],
)
def test_the_reader_takes_an_array_or_one_object_per_line_across_blocks(monkeypatch, text: str) -> None:
    monkeypatch.setattr(twstream, "BLOCK", 3)  # every value is cut by a block boundary
    a = {"uuid": "a", "description": 'd\u00e9 "q" \\ \u2603', "tags": ["x", "y"]}
    b = {"uuid": "b", "n": [1, 2.5, {"z": None}]}
    data = text.replace("{a}", json.dumps(a)).replace("{b}", json.dumps(b)).encode()
    assert list(twstream.items(io.BytesIO(data))) == [a, b]


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ('[{"a": 1}', "not closed"),
        ('[{"a": 1}] x', "more text"),
        ('[{"a": NaN}]', "NaN"),
        ('{"a": 1}\n{"b": 2 "c": 3}\n{"d": 4}', "delimiter"),
        ("[" + "[" * 100_000 + "]" * 100_000 + "]", "nested deeper"),
    ],
    ids=["open", "trailing", "nan", "bad", "deep"],
)
def test_the_reader_refuses_what_is_not_an_export(monkeypatch, text: str, why: str) -> None:
    monkeypatch.setattr(twstream, "BLOCK", 4)
    with pytest.raises(UsageError, match=why):
        list(twstream.items(io.BytesIO(text.encode())))


def test_the_reader_refuses_a_value_past_its_cap_without_reading_the_rest(monkeypatch) -> None:
    monkeypatch.setattr(twstream, "MAX_VALUE", 100)
    monkeypatch.setattr(twstream, "BLOCK", 10)
    source = io.BytesIO(b'[{"a": "' + b"x" * 10_000)
    with pytest.raises(UsageError, match="more than 100"):
        list(twstream.items(source))
    assert source.tell() < 1000


def test_the_next_chunk_is_made_ready_alongside_and_its_failure_is_the_callers() -> None:
    """`_readied` reads and readies chunk n+1 in a thread while chunk n lands (ADR 0015): every chunk comes
    in order with its new tasks ready, an error reading ahead is raised in the caller's thread, and no
    thread or ready task outlives the generator, even when the caller stops early."""
    import threading

    from michi.tasks import ready
    from michi.workflow import journal

    items = [{"record": r, "domain": "."} for r in _records(5)]
    seen = []
    for chunk in interop._readied(iter([items[:2], items[2:4], items[4:]])):
        assert len(ready._READY) == len(chunk)  # the next is readied only once these are taken
        assert all(ready.take(item) is not None for item in chunk)  # readied before it was handed over
        seen.append([item["record"]["uuid"] for item in chunk])
    assert seen == [[str(r["record"]["uuid"]) for r in part] for part in (items[:2], items[2:4], items[4:])]

    def broken() -> object:
        yield items[:2]
        raise OSError("the spool is gone")

    got = interop._readied(broken())  # type: ignore[arg-type]
    assert len(next(got)) == 2
    with pytest.raises(OSError, match="spool is gone"):
        next(got)
    early = interop._readied(iter([items[:2], items[2:4]]))
    next(early)
    early.close()  # the caller failed on its first chunk: the thread reading ahead is waited for
    assert not [t for t in threading.enumerate() if t.name == "michi-import-ahead"]
    assert not ready._READY and not journal._KNOWN  # nothing of the chunk read ahead is kept


def test_a_chunk_encoded_ahead_is_journaled_as_it_would_be_encoded_then(tmp_path: Path) -> None:
    """The thread reading ahead also encodes the chunk's records for the journal (ADR 0015): the journal
    is byte for byte what encoding them in the transaction makes, and only for that very list."""
    from michi.workflow import journal
    from michi.workflow.journal import Entry, Journal
    from michi.workflow.mutation import Mutation

    chunk = [{"record": {**r, "note": "é\u2028\"'"}, "domain": "a/b"} for r in _records(3)]
    mutation = Mutation("michi.tasks.create:import_tasks", {"records": chunk, "force": False})
    plain = Journal(tmp_path / "plain")
    plain.save([Entry("a1", mutation, "import", None)])
    journal.known_json(chunk)
    ahead = Journal(tmp_path / "ahead")
    try:
        ahead.save([Entry("a1", mutation, "import", None)])
        assert ahead.path.read_bytes() == plain.path.read_bytes()
        journal._KNOWN[id(chunk)] = (chunk, "[]")  # a text kept for another object is never used
        other = Mutation(mutation.apply, {"records": list(chunk), "force": False})
        elsewhere = Journal(tmp_path / "elsewhere")
        elsewhere.save([Entry("a1", other, "import", None)])
        assert elsewhere.path.read_bytes() == plain.path.read_bytes()
        assert [e.mutation for e in ahead.load()] == [mutation]
    finally:
        journal.forget_json(chunk)
    assert not journal._KNOWN


@pytest.mark.parametrize("chunk", [100, 1])
def test_a_uuid_twice_in_the_import_file_is_refused_before_anything_lands(
    cli, repo: Path, remote, monkeypatch, chunk: int
) -> None:
    """Two records of one uuid (in any case: uuids are read lower-case) made two `added` ids while one file
    landed, the second record's: the first id was burned and named a task that does not exist."""
    monkeypatch.setattr(interop, "IMPORT_CHUNK", chunk)
    assert cli(repo, "init").exit_code == 0
    first, second, other = _records(3)
    second["uuid"] = str(first["uuid"]).upper()
    source = repo.parent / "tw.json"
    source.write_text(json.dumps([first, other, second]))
    before = remote.head()
    result = cli(repo, "import", str(source), "--json")
    assert result.exit_code == 2 and result.json()["error"]["code"] == "usage", result.stdout
    assert str(first["uuid"]) in result.json()["error"]["message"]
    assert remote.head() == before


def test_the_import_prints_each_task_as_its_view(cli, repo: Path, remote, monkeypatch) -> None:
    monkeypatch.setenv("MICHI_IMPORT_CHUNK", "2")
    assert cli(repo, "init").exit_code == 0
    records = _records(4)
    records[0].update(description="caf\u00e9 \u201cquoted\u201d \\ back", tags=["b", "a"], priority="H")
    records[1].update(depends=[records[0]["uuid"]], project="p.q")
    records[2].update(annotations=[{"entry": "20240102T000000Z", "description": "n\u00f6te\n2"}])
    records[3].update(status="completed", end="20240103T000000Z")
    source = repo.parent / "tw.json"
    source.write_text(json.dumps(records))
    result = cli(repo, "import", str(source), "--json")
    assert result.exit_code == 0, result.stdout
    body = json.loads(result.stdout)
    # Written as `json.dumps` writes the result (compact, not ASCII-escaped), byte for byte.
    assert result.stdout.strip() == json.dumps(body, ensure_ascii=False, separators=(",", ":"))
    assert list(body) == ["tasks", "added", "modified", "skipped", "problems", "conflicts", "transaction"]
    shown = {t["id"]: t for t in cli(repo, "task", "list", "--state", "any", "--json").json()}
    assert [t["id"] for t in body["tasks"]] == [1, 2, 3, 4]
    assert body["tasks"] == [shown[t["id"]] for t in body["tasks"]]
    assert body["tasks"][1]["depends"] == [1]


def test_changed_prints_its_fragments_as_its_json() -> None:
    from michi.commands.task_common import Changed

    views = [{"id": 1, "description": "caf\u00e9"}, {"id": 2, "tags": ["a"]}]
    fragments = [json.dumps(v, ensure_ascii=False, separators=(",", ":")) for v in views]
    report = {"added": [1, 2], "problems": []}
    for result in (
        Changed(views, {"commit": "c"}, report),
        Changed(None, {"commit": "c"}, report, fragments=fragments),
    ):
        assert result.tasks == views
        assert result.json_text() == json.dumps(result.to_json(), ensure_ascii=False, separators=(",", ":"))
    assert Changed(None, {}, {}, fragments=[]).json_text() == '{"tasks":[],"transaction":{}}'


def _general_tags(tags: object) -> object:
    """`split_tags` as it was, with no shortcut for one plain tag."""
    if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
        return tags
    return list(dict.fromkeys(part.strip() for t in tags for part in t.split(",") if part.strip()))


def _general_whole(value: object) -> object:
    """`_whole` as it was, with no shortcut for an int."""
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError, OverflowError):
        return value
    return int(number) if number.is_integer() else value


def test_the_import_normalises_numbers_and_tags_as_the_general_way_does() -> None:
    from michi.tasks import taskwarrior

    tags: list[object] = [
        [],
        ["a"],
        [" a"],
        ["a "],
        [""],
        [","],
        ["a,b"],
        ["a", "a"],
        ["a", "b,a"],
        [1],
        "a",
        None,
    ]
    for value in tags:
        got = taskwarrior.split_tags(value)
        assert got == _general_tags(value) and type(got) is type(_general_tags(value)), value
    edge = 2**53
    numbers: list[object] = [
        0,
        1,
        -1,
        7,
        edge - 1,
        edge,
        edge + 1,
        -edge - 1,
        10**400,
        True,
        2.0,
        2.5,
        "3",
        "x",
        None,
    ]
    for value in numbers:
        got = taskwarrior._whole(value)
        assert got == _general_whole(value) and type(got) is type(_general_whole(value)), value


def test_the_next_chunks_files_are_compressed_ahead_when_their_ids_follow(
    cli, repo: Path, remote, monkeypatch
) -> None:
    """The thread reading ahead hashes and compresses the next chunk's files with the ids that follow the
    last chunk's (ADR 0015): under the lock only the first chunk's are compressed."""
    import threading
    import zlib

    from michi.git import pack

    monkeypatch.setenv("MICHI_IMPORT_CHUNK", "70")  # a pack from 64 objects on
    assert cli(repo, "init").exit_code == 0
    source = repo.parent / "tw.json"
    source.write_text(json.dumps(_records(210)))
    compressed: list[tuple[str, bytes]] = []
    real = zlib.compress

    def spy(data: bytes, *args: int) -> bytes:
        compressed.append((threading.current_thread().name, bytes(data)))
        return real(data, *args)

    monkeypatch.setattr(pack.zlib, "compress", spy)
    result = cli(repo, "import", str(source), "--json")
    assert result.exit_code == 0, result.stdout
    tasks = [(who, data) for who, data in compressed if data.startswith(b'{\n  "uuid"')]
    here = [json.loads(data)["michi_id"] for who, data in tasks if who == threading.current_thread().name]
    assert sorted(here) == list(range(1, 71))  # the first chunk's: no ids were known before it landed
    ahead = sorted(json.loads(data)["michi_id"] for who, data in tasks if who == "michi-import-ahead")
    assert ahead == list(range(71, 211))
    assert sorted(t["id"] for t in cli(repo, "task", "list", "--json").json()) == list(range(1, 211))
    assert "error" not in git(repo, "fsck", "--no-dangling").lower()
