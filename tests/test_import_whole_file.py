"""`michi import` checks the whole file before the first task lands (README): a record no task file may
hold, a recurring template included, refuses the file with one line naming it (exit 2), even when the
good records before it would land in an earlier chunk. `problems` (exit 4) is left for what depends on
the repository (a corrupt task file there)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import Remote, git
from twkit import taskwarrior

GOOD = "00000000-0000-4000-8000-00000000000a"
BAD = "00000000-0000-4000-8000-00000000000b"


def _task(uuid: str, **more: object) -> dict[str, object]:
    return {"uuid": uuid, "description": "a task", "status": "pending", "entry": "20250101T000000Z", **more}


@pytest.fixture
def ready(cli, repo: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    assert cli(repo, "init").exit_code == 0
    monkeypatch.setenv("MICHI_IMPORT_CHUNK", "1")  # the good record would land in a chunk of its own
    return repo


@pytest.mark.parametrize(
    "bad",
    [
        {"status": "bogus"},
        {"priority": "X"},
        {"entry": "20250230T000000Z"},
        {"description": ""},
        {"modified": "soon"},
        {"tags": "not a list"},
        {"annotations": "a note"},
        {"": "a field with no name"},  # Taskwarrior takes it, then exports JSON nothing reads
    ],
    ids=["status", "priority", "entry", "description", "modified", "tags", "notes", "empty key"],
)
def test_a_bad_record_refuses_the_whole_file(cli, ready: Path, remote: Remote, bad) -> None:
    source = ready.parent / "tw.json"
    source.write_text(json.dumps([_task(GOOD), _task(GOOD[:-1] + "c"), _task(BAD, **bad)]))
    before = remote.head()
    result = cli(ready, "import", str(source), "--json")
    assert result.exit_code == 2, result.stdout
    error = result.json()["error"]
    assert error["code"] == "usage", error
    assert BAD in error["message"] and "record 3" in error["message"], error
    assert "\n" not in error["message"] and error["hint"]
    assert remote.head() == before
    assert git(ready, "status", "--porcelain") == ""
    assert not list((ready / ".tasks").rglob(f"{GOOD}.json"))


def test_a_recurring_template_refuses_the_whole_file(cli, ready: Path, remote: Remote, tmp_path) -> None:
    """Taskwarrior's template (status recurring) has no place among michi's statuses: the file is refused
    whole, naming recurrence, rather than landing its instance without it; the hint's export lands."""
    tw = taskwarrior(tmp_path)
    tw("add", "water plants", "due:2030-01-01", "recur:weekly")
    tw("list")  # makes the first instance
    source = tmp_path / "tw.json"
    source.write_text(tw("export"))
    assert {t["status"] for t in json.loads(source.read_text())} == {"recurring", "pending"}
    before = remote.head()
    result = cli(ready, "import", str(source), "--json")
    assert result.exit_code == 2, result.stdout
    error = result.json()["error"]
    assert "recurring" in error["message"] and "\n" not in error["message"], error
    assert remote.head() == before
    source.write_text(tw(*error["hint"].split(": ", 1)[1].split()[1:]))  # `task status.not:recurring export`
    landed = cli(ready, "import", str(source), "--json")
    assert landed.exit_code == 0, landed.stdout
    assert len(landed.json()["added"]) == 1
