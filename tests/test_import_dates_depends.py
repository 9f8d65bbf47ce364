"""`michi import` takes Taskwarrior's own dates (`due`, `wait`, `scheduled`, `until`) only as dates, and
`depends` only as task uuids: anything else would be handed out by `next` (a `wait` that is no date),
crash `task import` of michi's export, or leave a task that never starts. And a dependency that is no
uuid, in a repository an older import filled, goes with `task modify --remove-depends TEXT`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import Remote, git
from importkit import A, B, refused
from twkit import taskwarrior


def _task(uuid: str, **more: object) -> dict[str, object]:
    return {"uuid": uuid, "description": "a task", "status": "pending", "entry": "20250101T000000Z", **more}


@pytest.fixture
def ready(cli, repo: Path) -> Path:
    assert cli(repo, "init").exit_code == 0
    return repo


def _refused(cli, repo: Path, remote: Remote, records: list[dict[str, object]]) -> str:
    error = refused(cli, repo, remote, records)
    assert error["code"] == "usage", error
    return str(error["message"])


@pytest.mark.parametrize("key", ["due", "wait", "scheduled", "until"])
@pytest.mark.parametrize("value", [12, "bad", "99999999T999999Z", {"a": 1}, "20250230T000000Z"])
def test_a_taskwarrior_date_that_is_no_date_refuses_the_file(cli, ready, remote, key, value) -> None:
    message = _refused(cli, ready, remote, [_task(A), _task(B, **{key: value})])
    assert B in message and key in message


def test_taskwarrior_dates_round_trip_and_a_bad_one_never_reaches_taskwarrior(
    cli, ready: Path, remote: Remote, tmp_path: Path
) -> None:
    _refused(cli, ready, remote, [_task(B, wait="99999999T999999Z")])  # `next` would hand it out
    dates = {"due": "20300101T000000Z", "wait": "20290101T000000Z", "scheduled": "20290601T120000Z"}
    source = tmp_path / "tw.json"
    source.write_text(json.dumps([_task(A, **dates)]))
    assert cli(ready, "import", str(source)).exit_code == 0
    assert cli(ready, "task", "next", "--json").exit_code != 0  # waiting until 2029: nothing to hand out
    tw = taskwarrior(tmp_path)
    (tmp_path / "michi.json").write_text(cli(ready, "export").stdout)
    tw("import", str(tmp_path / "michi.json"))
    (back,) = json.loads(tw("export"))
    assert {k: back[k] for k in dates} == dates


@pytest.mark.parametrize("dep", ["zz", "../x", "aaaaaaaa-1111-4111-8111-11111111111", "1", ""])
def test_a_dependency_that_is_no_uuid_refuses_the_file(cli, ready, remote, dep: str) -> None:
    assert cli(ready, "task", "add", "task one").exit_code == 0
    message = _refused(cli, ready, remote, [_task(A), _task(B, depends=[dep])])
    assert B in message and "depends" in message


@pytest.mark.parametrize("dep", ["zz", "../x", "1"])
def test_remove_depends_mends_a_dependency_that_is_no_uuid(cli, ready: Path, remote: Remote, dep) -> None:
    """Such an entry may be in a repository already (an older import): the text itself removes it, and
    `1`, also task 1's id, removes the text whatever else it names."""
    assert cli(ready, "task", "add", "task one").exit_code == 0
    assert cli(ready, "task", "add", "stuck").exit_code == 0
    (path,) = [p for p in (ready / ".tasks").rglob("*.json") if '"michi_id": 2,' in p.read_text()]
    record = json.loads(path.read_text())
    path.write_text(json.dumps({**record, "depends": [dep]}, indent=2) + "\n")
    git(ready, "commit", "-qam", "an older import's dependency", "--no-verify")
    git(ready, "push", "-q", "--no-verify")
    result = cli(ready, "task", "modify", "2", "--remove-depends", dep, "--json")
    assert result.exit_code == 0, result.stdout
    assert cli(ready, "task", "show", "2", "--json").json()["depends"] == []
    assert cli(ready, "task", "modify", "2", "--remove-depends", "nothere").exit_code == 3  # still unknown
