"""The id map (ADR 0015): `done N`, `modify N` and uuid lookups read a block or two of a sorted file plus
the summary's overlay, not every path; they answer as the full ids do (ambiguous ids, unknown ids, uuid
prefixes), and a stale, damaged or lying map is never acted on."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from conftest import git

from michi.config import load
from michi.repo import find_repo
from michi.tasks import blocks, idmap
from michi.tasks.errors import AmbiguousId, TaskNotFound
from michi.tasks.index import TOP_NAME, Index, light, load_checked
from michi.workflow import read_snapshot


@pytest.fixture
def ready(cli, repo: Path) -> Path:
    assert cli(repo, "init").exit_code == 0
    for text in ("one", "two", "three"):
        assert cli(repo, "task", "add", text).exit_code == 0
    (_state(repo) / TOP_NAME).unlink()
    _light(repo)  # the map made for this tree: three rows in its base, no overlay
    summary = load_checked(_state(repo), TOP_NAME)
    assert summary[4] == summary[0] and not summary[5]
    return repo


def _light(repo: Path) -> Index:
    paths = find_repo(repo)
    return light(read_snapshot(paths, load(paths.config_file)), paths.state_dir)


def _state(repo: Path) -> Path:
    return repo / ".git" / "michi"


def _answer(index: Index, ref: str) -> str:
    try:
        return index.find(ref)
    except (AmbiguousId, TaskNotFound) as exc:
        return type(exc).__name__


def _full(repo: Path) -> Index:
    """The same tree's answers from every id, as before the map."""
    index = _light(repo)
    return Index(index.tree, ids=dict(index.ids))


def _refs(repo: Path) -> list[str]:
    stems = [p.stem for p in (repo).glob("**/.tasks/*/*.json")]
    return [*map(str, range(0, 9)), "99999999", *stems, *(s[:6] for s in stems), "0000", "ffff", "abc"]


def _map_answers(repo: Path) -> dict[str, str]:
    index = _light(repo)
    assert index._idmap is not None
    out = {ref: _answer(index, ref) for ref in _refs(repo)}
    assert "ids" not in index.__dict__ and index._ids is None  # no path list was loaded
    return out


def _push_file(repo: Path, rel: str, text: str, message: str) -> None:
    target = repo / rel
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text)
    git(repo, "add", rel)
    git(repo, "commit", "-qm", message)
    git(repo, "push", "-q", "origin", "HEAD:main")


def _file_of(repo: Path, michi_id: int) -> Path:
    return next(p for p in repo.glob(".tasks/*/*.json") if f'"michi_id": {michi_id},' in p.read_text())


# -- the block file --


@pytest.mark.parametrize("seed", range(6))
def test_block_lookups_match_a_scan_of_every_row(tmp_path: Path, seed: int) -> None:
    """Repeated keys across block boundaries, keys absent, before the first and after the last."""
    rng = random.Random(seed)
    ints = sorted((rng.randrange(1, 40), f"p{n}") for n in range(rng.randrange(0, 120)))
    names = sorted(("".join(rng.choice("0ab1") for _ in range(rng.randrange(1, 5))), n) for n in range(90))
    path = tmp_path / "t"
    path.write_bytes(blocks.dumps(("h", 1), {"id": ints, "name": names}, rows=rng.choice([1, 2, 3, 7])))
    table = blocks.Table.open(path)
    assert table is not None and table.head == ("h", 1)
    for key in range(0, 42):
        assert table.find("id", key) == [r for r in ints if r[0] == key]
    for prefix in ("", "0", "a", "ab", "b0", "1", "10a", "z"):
        assert table.prefixed("name", prefix) == [r for r in names if r[0].startswith(prefix)]
    assert list(table.rows("id")) == ints


def test_a_damaged_block_or_head_is_never_read(tmp_path: Path) -> None:
    rows = [(n, f"p{n}") for n in range(100)]
    good = blocks.dumps("h", {"id": rows}, rows=10)
    path = tmp_path / "t"
    path.write_bytes(good[:-5] + bytes([good[-5] ^ 1]) + good[-4:])  # inside the last block
    table = blocks.Table.open(path)
    assert table is not None and table.find("id", 3) == [(3, "p3")]  # the first block is sound
    with pytest.raises(blocks.Damaged):
        table.find("id", 99)
    head_at = 14
    path.write_bytes(good[:head_at] + bytes([good[head_at] ^ 1]) + good[head_at + 1 :])
    assert blocks.Table.open(path) is None
    path.write_bytes(good[:20])
    assert blocks.Table.open(path) is None


# -- lookups in a repository --


def test_lookups_come_from_the_map_and_follow_new_commits(cli, ready: Path, remote) -> None:
    """Added, changed and removed files (the overlay) answer as the full ids do, with no path list."""
    assert _map_answers(ready) == {r: _answer(_full(ready), r) for r in _refs(ready)}
    other = remote.clone("other")
    assert cli(other, "task", "add", "four from elsewhere").exit_code == 0
    assert cli(other, "task", "done", "2").exit_code == 0
    git(other, "rm", "-q", str(_file_of(other, 1).relative_to(other)))
    git(other, "commit", "-qm", "task 1 removed by hand")
    git(other, "push", "-q", "origin", "HEAD:main")
    assert cli(ready, "sync").exit_code == 0
    answers = _map_answers(ready)
    assert answers == {r: _answer(_full(ready), r) for r in _refs(ready)}
    assert answers["1"] == "TaskNotFound" and answers["4"].endswith(".json")
    summary = load_checked(_state(ready), TOP_NAME)
    assert summary[4] != summary[0] and summary[5]  # answered from the base and its overlay


def test_two_files_with_one_id_are_ambiguous_in_the_base_and_in_the_overlay(
    cli, ready: Path, remote, monkeypatch
) -> None:
    other = remote.clone("other")
    two = _file_of(other, 2)
    copy = f"copy/.tasks/{two.stem[:2]}/{two.stem}.json"  # a folder copied with its tasks
    _push_file(other, copy, two.read_text(), "a second file with id 2")
    assert cli(ready, "sync").exit_code == 0
    answers = _map_answers(ready)  # the copy is in the overlay
    assert answers["2"] == answers[two.stem] == answers[two.stem[:6]] == "AmbiguousId"
    before = remote.head()
    done = cli(ready, "task", "done", "2", "--json")
    assert done.exit_code == 2 and done.json()["error"]["code"] == "ambiguous_id"
    assert remote.head() == before
    # Rewritten as the base, the two rows sit side by side in the id table.
    monkeypatch.setattr(idmap, "REBASE", 0)
    assert cli(other, "task", "done", "3").exit_code == 0
    assert cli(ready, "sync").exit_code == 0
    answers = _map_answers(ready)
    assert answers["2"] == answers[two.stem] == answers[two.stem[:6]] == "AmbiguousId"
    summary = load_checked(_state(ready), TOP_NAME)
    assert summary[4] == summary[0] and summary[5] == {}  # the base is the snapshot's tree
    assert _map_answers(ready) == {r: _answer(_full(ready), r) for r in _refs(ready)}


def test_an_id_no_task_has_is_not_found(cli, ready: Path) -> None:
    index = _light(ready)
    for ref in ("4", "0", "99999999", "123456789012"):
        with pytest.raises(TaskNotFound):
            index.find(ref)
    assert index._ids is None
    result = cli(ready, "task", "done", "4", "--json")
    assert result.exit_code != 0 and result.json()["error"]["code"] == "task_not_found"


@pytest.mark.parametrize("where", ["id", "name"])
def test_a_damaged_map_is_not_believed_and_is_made_again(cli, ready: Path, where: str) -> None:
    path = _state(ready) / idmap.NAME
    good = path.read_bytes()
    if where == "id":  # a byte of the id table's only block (the name table's follows it)
        table = blocks.Table.open(path)
        assert table is not None
        at = table._base + 20
        bad = good[:at] + bytes([good[at] ^ 0x01]) + good[at + 1 :]
        path.write_bytes(bad)
        index = _light(ready)
        assert index.find("2") == _full(ready).find("2")
        assert index._idmap is None and path.read_bytes() != bad and blocks.Table.open(path) is not None
        return
    bad = good[:-3] + bytes([good[-3] ^ 0x20]) + good[-2:]  # in the last block: the name table's
    path.write_bytes(bad)
    index = _light(ready)
    assert index.find("2") == _full(ready).find("2")  # the id table's block is sound
    uuid = _file_of(ready, 3).stem
    assert index.find(uuid) == _full(ready).find(uuid)  # answered from the ids, which wrote it again
    assert index._idmap is None and path.read_bytes() != bad and blocks.Table.open(path) is not None
    assert _map_answers(ready) == {r: _answer(_full(ready), r) for r in _refs(ready)}
    path.write_bytes(bad)
    path.with_name(TOP_NAME).unlink()  # no summary either: the ids' way, which writes both
    assert _light(ready).find(uuid) == _full(ready).find(uuid)
    assert path.read_bytes() != bad and blocks.Table.open(path) is not None


def test_a_map_of_another_tree_is_not_used(cli, ready: Path) -> None:
    _light(ready)
    idmap.write(_state(ready), "0" * 40, {".tasks/aa/aa.json": 1})
    index = _light(ready)
    assert index._idmap is None
    assert index.find("1") == _file_of(ready, 1).relative_to(ready).as_posix()


def test_a_map_that_lies_past_its_checksums_is_not_acted_on(cli, ready: Path) -> None:
    """A map naming task 1's file for id 2: the transaction reads the file it names and, finding another
    task there, resolves the id on the fresh tree."""
    one, two = (_file_of(ready, n).relative_to(ready).as_posix() for n in (1, 2))
    summary = load_checked(_state(ready), TOP_NAME)
    assert summary[4] == summary[0] and not summary[5]
    idmap.write(_state(ready), summary[4], {one: 2, two: 1})
    assert _light(ready).find("2") == one  # the lie, as the map tells it
    done = cli(ready, "task", "done", "2", "--json")
    assert done.exit_code == 0 and done.json()["id"] == 2
    assert '"completed"' in (ready / two).read_text()
    assert '"completed"' not in (ready / one).read_text()


def test_a_first_full_read_makes_the_map_for_the_next_lookup(cli, ready: Path, remote) -> None:
    """A fresh clone's first `task list` reads every task anyway: it writes the summary and the id map,
    so the next `done N` loads no path list."""
    other = remote.clone("other")
    state = _state(other)
    assert cli(other, "task", "list").exit_code == 0
    summary = load_checked(state, TOP_NAME)
    assert summary is not None and summary[4] == summary[0] and not summary[5]
    answers = _map_answers(other)
    assert answers == {r: _answer(_full(other), r) for r in _refs(other)}
    assert answers["3"] == _file_of(other, 3).relative_to(other).as_posix()


def test_the_paths_with_an_id_come_from_the_map(ready: Path) -> None:
    """`next --claim` asks, inside the lock, whether another file has the claimed id (ADR 0007): a block of
    the map answers, as the full ids do, also for an id two files share."""
    one = _file_of(ready, 1)
    _push_file(
        ready,
        ".tasks/00/00000000-0000-4000-8000-000000000042.json",
        one.read_text().replace(one.stem, "00000000-0000-4000-8000-000000000042"),
        "a copy",
    )
    full = _full(ready)
    assert len(full.paths_with_id(1)) == 2
    index = _light(ready)
    assert index._idmap is not None
    assert {n: index.paths_with_id(n) for n in range(5)} == {n: full.paths_with_id(n) for n in range(5)}
    assert "ids" not in index.__dict__ and index._ids is None


def test_dependencies_are_named_from_the_map(ready: Path) -> None:
    """`task add --depends N` takes N's uuid, and every changing command shows dependencies as ids: a
    block of the map answers both, as the full index does, with no record and no path list read (at
    50,000 tasks that read made `add --depends` cost four plain adds). A file that does not parse is
    still `corrupt_task`, and a uuid two files share is left to the full ids."""
    from michi.tasks.errors import CorruptTask

    full = _full(ready)
    stems = sorted(p.stem for p in ready.glob(".tasks/*/*.json"))
    unknown = "00000000-0000-4000-8000-0000000000ff"
    index = _light(ready)
    wanted = [_file_of(ready, 1).stem, _file_of(ready, 2).stem, stems[0]]
    assert [index.uuid_of(r) for r in ("1", "2", stems[0][:8])] == wanted
    assert (
        index.ids_of((*stems, unknown))
        == full.ids_of((*stems, unknown))
        == [*index.ids_of(tuple(stems)), unknown]
    )
    assert sorted(index.ids_of(tuple(stems))) == [1, 2, 3]
    assert "ids" not in index.__dict__ and "entries" not in index.__dict__  # the map answered
    _file_of(ready, 2).write_text("{ not json")
    git(ready, "commit", "-qam", "broken")
    git(ready, "push", "-q", "origin", "HEAD:main")
    index = _light(ready)
    broken = next(s for s in stems if s not in {index.uuid_of("1"), index.uuid_of("3")})
    with pytest.raises(CorruptTask):
        index.uuid_of(broken)
    assert broken in index.ids_of((broken,))  # no id to show: the uuid stays
    assert "entries" not in index.__dict__


def test_ids_another_codes_parser_gave_are_not_believed(ready: Path) -> None:
    """The ids cache, the summary and the map say which files parse, as the code that wrote them parsed:
    after an upgrade that parses differently (a file once refused is a task now, or the reverse), what
    they say is not used; the files are read again."""
    from michi.tasks.index import IDS_NAME, save_checked

    one, two = (_file_of(ready, n).relative_to(ready).as_posix() for n in (1, 2))
    state = _state(ready)
    _light(ready).ids  # noqa: B018  # the ids cache written, by this code
    tree, ids, _made_by = load_checked(state, IDS_NAME)
    summary = load_checked(state, TOP_NAME)
    lie = {**ids, one: 2, two: 1}
    save_checked(state, IDS_NAME, (tree, lie, "another code"))
    save_checked(state, TOP_NAME, (*summary[:-1], "another code"))
    idmap.write(state, summary[4], lie)
    index = _light(ready)
    assert index.find("2") == two and index.find("1") == one
    assert load_checked(state, TOP_NAME)[-1] == summary[-1]  # made again, by this code
