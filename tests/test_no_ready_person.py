"""`no_ready_task` never tells an agent's loop "all work is finished" nor "wait" when only a person can
help (ADR 0007): a task file that cannot be read counts as open work, a dependency on a task no file
holds is `missing` (not "others hold it"), and `open == stuck` is the stop rule for both."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import Remote, git
from importkit import A, B, run_import, task

GONE = "0e4ab0a8-3c59-4d7e-9d2c-3b0d0f7a1c11"  # a uuid no task file has


@pytest.fixture
def ready(cli, repo: Path) -> Path:
    assert cli(repo, "init").exit_code == 0
    return repo


def _mangle(repo: Path, kind: str) -> str:
    """The only task file, made unreadable by hand (a bad merge's conflict markers, or cut short),
    committed and pushed past the hook."""
    path = next(p for p in git(repo, "ls-files", ".tasks").split() if p.endswith(".json"))
    text = (repo / path).read_text()
    if kind == "conflict":
        text = f"<<<<<<< HEAD\n{text}=======\n{text.replace('todo', 'in_progress')}>>>>>>> other\n"
    else:
        text = text[: len(text) // 2]
    (repo / path).write_text(text)
    git(repo, "commit", "-qam", "a bad merge", "--no-verify")
    git(repo, "push", "-q", "origin", "main")
    return path


@pytest.mark.parametrize("kind", ["conflict", "cut_short"])
@pytest.mark.parametrize("verb", [["next", "--claim"], ["next"]])
def test_an_unreadable_task_file_is_never_counted_as_finished(cli, ready: Path, kind: str, verb) -> None:
    assert cli(ready, "task", "add", "an open task").exit_code == 0
    _mangle(ready, kind)
    answer = cli(ready, "--agent", "a", "task", *verb, "--json")
    assert answer.exit_code == 3, answer.stdout
    error = answer.json()["error"]
    assert error["code"] == "no_ready_task"
    assert error["open"] == error["unreadable"] == error["stuck"] == 1, error  # never "open: 0, stop"
    assert "could not be read" in error["message"] and "michi doctor" in error["hint"], error
    assert "a person" in error["hint"] and "nothing is left" not in error["hint"]
    assert "1 task file(s) could not be read; 'michi doctor' lists them" in answer.stderr


def test_an_unreadable_file_beside_held_work_is_named_in_the_wait_hint(cli, ready: Path) -> None:
    assert cli(ready, "task", "add", "soon unreadable").exit_code == 0
    _mangle(ready, "conflict")
    assert cli(ready, "task", "add", "held by b").exit_code == 0
    assert cli(ready, "--agent", "b", "task", "next", "--claim", "--json").exit_code == 0
    error = cli(ready, "--agent", "a", "task", "next", "--claim", "--json").json()["error"]
    assert (error["open"], error["claimed"], error["unreadable"], error["stuck"]) == (2, 1, 1, 1), error
    assert "ask again" in error["hint"] and "michi doctor" in error["hint"], error


def test_a_dependency_no_file_holds_is_missing_not_held_by_others(cli, ready: Path, remote: Remote) -> None:
    """Imported from Taskwarrior after the dependency was purged: the task never gets ready (a missing
    dependency blocks, ADR 0007), so the loop is told to call a person, who finds it in `doctor` with
    the fix that works."""
    records = [task(A, GONE), task(B, A)]  # B waits on A, which waits on nothing there is
    assert run_import(cli, ready, records, "--json").exit_code == 0
    answer = cli(ready, "--agent", "a", "task", "next", "--claim", "--json")
    assert answer.exit_code == 3, answer.stdout
    error = answer.json()["error"]
    assert (error["open"], error["missing"], error["blocked"], error["stuck"]) == (2, 2, 0, 2), error
    assert "others hold it" not in error["hint"] and "a person" in error["hint"], error
    assert "does not exist" in error["message"], error
    doctor = cli(ready, "doctor", "--json").json()
    found = [p for p in doctor["problems"] if p.get("depends") == GONE]
    assert not doctor["ok"] and [p["uuid"] for p in found] == [A], doctor
    assert f"--remove-depends {GONE}" in found[0]["problem"]
    dropped = cli(ready, "task", "modify", "1", "--remove-depends", GONE, "--json")
    assert dropped.exit_code == 0 and dropped.json()["depends"] == [], dropped.stdout
    claimed = cli(ready, "--agent", "a", "task", "next", "--claim", "--json")
    assert claimed.exit_code == 0 and claimed.json()["uuid"] == A, claimed.stdout
    assert cli(ready, "doctor", "--json").json()["ok"]


def test_a_task_waiting_on_a_held_task_with_a_missing_dependency_waits(cli, ready: Path) -> None:
    """Only tasks no one holds pass `missing` on: A's holder can still finish it, so B is blocked."""
    assert run_import(cli, ready, [task(A, GONE), task(B, A)], "--json").exit_code == 0
    assert cli(ready, "--agent", "b", "task", "claim", "1", "--json").exit_code == 0
    error = cli(ready, "--agent", "a", "task", "next", "--claim", "--json").json()["error"]
    assert (error["missing"], error["blocked"], error["claimed"], error["stuck"]) == (0, 2, 1, 0), error
    assert "ask again" in error["hint"]


def test_the_guide_documents_every_count() -> None:
    from michi.commands.guide import NO_READY_COUNTS
    from michi.tasks.backlog import COUNTS

    assert tuple(NO_READY_COUNTS) == COUNTS
