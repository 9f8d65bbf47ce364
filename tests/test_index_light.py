"""The changing commands' light index (ADR 0015): paths and ids from the small cache, brought up to the
snapshot by its diff, records read only when asked; never stale, and rebuilt when damaged."""

from __future__ import annotations

from pathlib import Path

import pytest

from michi.config import load
from michi.repo import find_repo
from michi.tasks.index import IDS_NAME, light
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
