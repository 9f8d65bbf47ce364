"""`task import` refuses what `task modify` and `annotate` could never make, before anything lands:
tasks waiting for each other or for themselves (`dependency_cycle`, as `modify --depends` refuses) and
notes whose time is no date. One line names the record and the fix; exit 2; the remote is unchanged."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import Remote, git
from importkit import A, B, C, refused, task


@pytest.fixture
def ready(cli, repo: Path) -> Path:
    assert cli(repo, "init").exit_code == 0
    return repo


def _refused(cli, repo: Path, remote: Remote, records: list[dict[str, object]], code: str) -> dict:
    error = refused(cli, repo, remote, records)
    assert error["code"] == code, error
    return error


@pytest.mark.parametrize(
    "records",
    [
        [task(A, A)],
        [task(A, B), task(B, A)],
        [task(A, B), task(B, C), task(C, A)],
        [task(A, B.upper()), task(B, A)],
    ],
    ids=["self", "two", "three", "upper_case"],
)
def test_an_import_closing_a_cycle_is_refused(cli, ready: Path, remote: Remote, records) -> None:
    error = _refused(cli, ready, remote, records, "dependency_cycle")
    assert A in error["message"]


def test_a_cycle_through_a_task_already_there_is_refused(cli, ready: Path, remote: Remote) -> None:
    """The existing task 1 waits for A; the import makes A wait for task 1."""
    source = ready.parent / "first.json"
    source.write_text(json.dumps([task(A)]))
    assert cli(ready, "import", str(source)).exit_code == 0
    assert cli(ready, "task", "add", "there", "--depends", A).exit_code == 0
    there = cli(ready, "task", "show", "2", "--json").json()["uuid"]
    _refused(cli, ready, remote, [task(A, there)], "dependency_cycle")


def test_a_cycle_among_closed_tasks_blocks_nothing_and_lands(cli, ready: Path) -> None:
    source = ready.parent / "tw.json"
    done = {"status": "completed", "end": "20240102T000000Z"}
    source.write_text(json.dumps([task(A, B, **done), task(B, A, **done)]))
    result = cli(ready, "import", str(source), "--json")
    assert result.exit_code == 0, result.stdout


@pytest.mark.parametrize("entry", ["yesterday", "", 5, None, "2024-01-01T00:00:00Z"])
def test_a_note_whose_time_is_no_date_is_refused(cli, ready: Path, remote: Remote, entry) -> None:
    note = {"entry": entry, "description": "a note"}
    error = _refused(cli, ready, remote, [task(A), task(B, annotations=[note])], "usage")
    assert B in error["message"] and "annotation" in error["message"]


def test_an_import_that_could_not_take_a_record_says_so_in_its_exit_code(
    cli, ready: Path, remote: Remote
) -> None:
    """A record the import reports as a problem (here: its task's file in the repository is corrupt, so
    michi will not overwrite it) is not imported: an agent reading only the exit code must not take the
    import for complete. What could be imported lands; the exit is 4 with the whole report."""
    source = ready.parent / "tw.json"
    source.write_text(json.dumps([task(A)]))
    assert cli(ready, "import", str(source), "--json").exit_code == 0
    (path,) = [p for p in (ready / ".tasks").rglob("*.json") if A in p.name]
    path.write_text("{ not json")
    git(ready, "commit", "-qam", "a hand edit gone wrong")
    git(ready, "push", "-q")
    source.write_text(json.dumps([task(A, description="changed"), task(B)]))
    result = cli(ready, "import", str(source), "--json")
    assert result.exit_code == 4, result.stdout
    error = result.json()["error"]
    assert error["code"] == "import_problems", error
    assert "\n" not in error["message"] and error["hint"]
    assert [p["path"] for p in error["problems"]] == [path.relative_to(ready).as_posix()]
    assert len(error["added"]) == 1  # B landed
    assert path.read_text() == "{ not json"
