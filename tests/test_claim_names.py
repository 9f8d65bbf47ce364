"""`next --claim` hands out a name that later commands resolve to the claimed task alone (ADR 0007): two
task files sharing an id (a copied folder, a hand-made file) must not leave the agent with `done ID` that
exits 2 `ambiguous_id` on a task it holds."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import git

OTHER_UUID = "0e4ab0a8-3c59-4d7e-9d2c-3b0d0f7a1c11"


@pytest.fixture
def ready(cli, repo: Path) -> Path:
    assert cli(repo, "init").exit_code == 0
    assert cli(repo, "task", "add", "the first task", "-p", "H").exit_code == 0
    return repo


def _push_copy(repo: Path, uuid: str, michi_id: int, folder: str = "copy") -> str:
    """A second task file with id `michi_id` (and `uuid`), committed and pushed by hand."""
    source = next((repo / ".tasks").glob("*/*.json"))
    record = json.loads(source.read_text())
    record.update(uuid=uuid, michi_id=michi_id, description="a copy", priority="H")
    path = repo / folder / ".tasks" / uuid[:2] / f"{uuid}.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(record))
    git(repo, "add", folder)
    git(repo, "commit", "-qm", "a hand-made file")
    git(repo, "push", "-q", "origin", "main")
    return path.relative_to(repo).as_posix()


def test_a_claimed_task_whose_id_another_file_has_is_named_by_its_uuid(cli, ready: Path) -> None:
    _push_copy(ready, OTHER_UUID, 1)
    names = []
    for _ in range(2):
        claimed = cli(ready, "--agent", "a1", "task", "next", "--claim", "--all", "--json")
        assert claimed.exit_code == 0, claimed.stdout
        task = claimed.json()
        assert task["id"] == task["uuid"], task  # the number names two files: the uuid is the name
        assert "michi doctor" in claimed.stderr
        names.append(task["id"])
        done = cli(ready, "--agent", "a1", "task", "done", task["id"], "--json")
        assert done.exit_code == 0, done.stdout
        assert done.json()["uuid"] == task["uuid"]
    assert len(set(names)) == 2


def test_a_task_neither_id_nor_uuid_names_alone_is_not_handed_out(cli, ready: Path) -> None:
    """A folder copied with its `.tasks`: the copy has the same uuid and id. No name could finish it, so
    next --claim takes the next task, and says there is none when only those are left."""
    first = cli(ready, "task", "show", "1", "--json").json()
    _push_copy(ready, first["uuid"], 1)
    assert cli(ready, "task", "add", "a later task", "-p", "L").exit_code == 0
    claimed = cli(ready, "--agent", "a1", "task", "next", "--claim", "--all", "--json")
    assert claimed.exit_code == 0, claimed.stdout
    assert claimed.json()["description"] == "a later task" and claimed.json()["id"] == 2
    assert cli(ready, "--agent", "a1", "task", "done", "2", "--json").exit_code == 0
    nothing = cli(ready, "--agent", "a1", "task", "next", "--claim", "--all", "--json")
    assert nothing.exit_code == 3, nothing.stdout
    error = nothing.json()["error"]
    assert error["code"] == "no_ready_task" and error["open"] == error["unnamed"] == 2, error
    assert "a person" in error["hint"]
