"""The changing commands' light index (ADR 0015): paths and ids from the small cache, brought up to the
snapshot by its diff, records read only when asked; never stale, and rebuilt when damaged."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import git

from michi.config import load
from michi.repo import find_repo
from michi.tasks.index import IDS_NAME, TOP_NAME, light
from michi.workflow import read_snapshot


@pytest.fixture
def ready(cli, repo: Path) -> Path:
    assert cli(repo, "init").exit_code == 0
    for text in ("one", "two", "three"):
        assert cli(repo, "task", "add", text).exit_code == 0
    return repo


def _light(repo: Path):  # type: ignore[no-untyped-def]
    paths = find_repo(repo)
    return light(read_snapshot(paths, load(paths.config_file)), paths.state_dir)


def test_ids_come_from_the_small_cache_and_follow_new_commits(cli, ready: Path, remote) -> None:
    assert cli(ready, "task", "list").exit_code == 0  # writes both caches
    other = remote.clone("other")
    assert cli(other, "task", "add", "four from elsewhere").exit_code == 0
    assert cli(ready, "sync").exit_code == 0
    index = _light(ready)
    assert sorted(index.by_id) == [1, 2, 3, 4]
    assert "entries" not in index.__dict__  # no record was read
    path = index.find("4")
    assert index.ids_of((path.rsplit("/", 1)[-1][:-5],)) == [4]
    # Asking for records reads them, and they agree with the ids.
    assert index.tasks[path].description == "four from elsewhere"


def test_a_damaged_ids_cache_is_rebuilt_never_believed(cli, ready: Path) -> None:
    assert cli(ready, "task", "list").exit_code == 0
    cache = ready / ".git" / "michi" / IDS_NAME
    raw = bytearray(cache.read_bytes())
    raw[-3] ^= 0xFF
    cache.write_bytes(bytes(raw))
    assert sorted(_light(ready).by_id) == [1, 2, 3]
    cache.unlink()
    assert sorted(_light(ready).by_id) == [1, 2, 3]


def test_the_highest_id_and_the_unreadable_count_need_no_path(cli, ready: Path, remote) -> None:
    """`task add` asks only these: they come from the smallest cache, brought up by each new commit's
    diff, and agree with the ids; the ids are loaded only when asked."""
    assert cli(ready, "task", "list").exit_code == 0
    assert _light(ready).max_id == 3  # writes the summary
    other = remote.clone("other")
    assert cli(other, "task", "add", "four from elsewhere").exit_code == 0
    assert cli(other, "task", "done", "2").exit_code == 0
    task = next(p for p in (other / ".tasks").glob("*/*.json") if '"michi_id": 1,' in p.read_text())
    task.write_text("{ not json")
    git(other, "commit", "-qam", "a broken task file")
    git(other, "push", "-q", "origin", "HEAD:main")
    assert cli(ready, "sync").exit_code == 0
    index = _light(ready)
    assert (index.max_id, index.problem_count) == (4, 1)
    assert "ids" not in index.__dict__ and index._ids is None  # no path was loaded
    assert sorted(index.by_id) == [2, 3, 4]  # the ids, loaded now, say the same


def test_a_change_to_the_task_holding_the_highest_id_is_judged_by_the_ids(cli, ready: Path, remote) -> None:
    assert _light(ready).max_id == 3
    other = remote.clone("other")
    gone = next(p for p in (other / ".tasks").glob("*/*.json") if '"michi_id": 3,' in p.read_text())
    git(other, "rm", "-q", str(gone.relative_to(other)))
    git(other, "commit", "-qm", "the newest task removed by hand")
    git(other, "push", "-q", "origin", "HEAD:main")
    assert cli(ready, "sync").exit_code == 0
    index = _light(ready)
    assert index.max_id == 2
    assert "ids" in index.__dict__ or index._ids is not None  # found from the ids, not the summary
    assert cli(ready, "task", "done", "2").exit_code == 0  # a change to the highest, keeping its id
    index = _light(ready)
    assert index.max_id == 2 and index._ids is None


def test_a_damaged_summary_is_never_believed(cli, ready: Path) -> None:
    assert _light(ready).max_id == 3
    cache = ready / ".git" / "michi" / TOP_NAME
    cache.write_bytes(cache.read_bytes()[:-2] + b"\x00\x00")
    assert _light(ready).max_id == 3
    cache.unlink()
    assert _light(ready).max_id == 3
