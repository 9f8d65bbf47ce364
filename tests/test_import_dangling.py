"""`michi import` takes a task that depends on a uuid neither the import nor any task file holds (as
Taskwarrior's `task import` does), and says so once: such a task can never start (ADR 0007), which
`next` and `doctor` say too. The note counts them and names the first few, on stderr and in `--json`."""

from __future__ import annotations

from pathlib import Path

import pytest
from importkit import ENTRY, A, B, C, run_import, task

GONE = [f"00000000-0000-4000-8000-0000000000f{i}" for i in range(5)]


def _task(uuid: str, *depends: str, **more: object) -> dict[str, object]:
    """With a `modified` time: an import compares it with the task file's to find a conflict."""
    return task(uuid, *depends, modified=ENTRY, **more)


@pytest.fixture
def ready(cli, repo: Path) -> Path:
    assert cli(repo, "init").exit_code == 0
    return repo


def _dangling(notes: list[str]) -> list[str]:
    return [n for n in notes if "no task file holds" in n]


def test_an_open_task_waiting_on_no_task_lands_with_a_note(cli, ready: Path) -> None:
    done = {"status": "completed", "end": "20240102T000000Z"}
    records = [_task(A, GONE[0]), _task(B, A), _task(C, GONE[1], **done)]  # C is closed: it blocks nothing
    result = run_import(cli, ready, records, "--json")
    assert result.exit_code == 0, result.stdout
    body = result.json()
    assert len(body["added"]) == 3
    (note,) = _dangling(body["transaction"]["notes"])
    assert "1 imported open task(s) depend on 1 task(s)" in note and GONE[0] in note and GONE[1] not in note
    assert "michi doctor" in note and "\n" not in note
    doctor = cli(ready, "doctor", "--json").json()["problems"]
    assert [p["depends"] for p in doctor if "depends" in p] == [GONE[0]]

    people = run_import(cli, ready, [_task(A, GONE[0], description="again")])  # a changed task, for people
    assert people.exit_code == 0
    assert _dangling(people.stderr.splitlines()) and GONE[0] in people.stderr


def test_the_note_names_the_first_few(cli, ready: Path) -> None:
    result = run_import(cli, ready, [_task(A, *GONE), _task(B, GONE[0])], "--json")
    assert result.exit_code == 0, result.stdout
    (note,) = _dangling(result.json()["transaction"]["notes"])
    assert "2 imported open task(s) depend on 5 task(s)" in note and "and 2 more" in note
    assert all(u in note for u in GONE[:3]) and not any(u in note for u in GONE[3:])


def test_a_dependency_on_a_task_already_there_is_no_note(cli, ready: Path) -> None:
    """In any spelling: a uuid in capitals names the same task for the import, `next` and `doctor`."""
    there = cli(ready, "task", "add", "there", "--json").json()["uuid"]
    result = run_import(cli, ready, [_task(A, there), _task(B, there.upper())], "--json")
    assert result.exit_code == 0, result.stdout
    assert _dangling(result.json()["transaction"]["notes"]) == []
    assert cli(ready, "doctor", "--json").json()["problems"] == []


def test_an_import_that_exits_4_keeps_the_note(cli, ready: Path) -> None:
    """A conflict (michi changed the task after the export) still reports the dependency, in the error's
    transaction for agents and on stderr for people."""
    assert run_import(cli, ready, [_task(A, GONE[0])], "--json").exit_code == 0
    assert cli(ready, "task", "annotate", "1", "changed in michi").exit_code == 0
    result = run_import(cli, ready, [_task(A, GONE[0], description="old export")], "--json")
    assert result.exit_code == 4, result.stdout
    error = result.json()["error"]
    assert error["code"] == "import_conflict"
    assert _dangling(error["transaction"]["notes"]) and GONE[0] in result.stderr
