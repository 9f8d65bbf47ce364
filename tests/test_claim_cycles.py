"""Tasks that depend on each other never get ready (`michi doctor`: "none of them can ever start"), nor do
the tasks that wait on them: `no_ready_task` counts them as `cycle` and `stuck`, so an agent's loop stops
and calls a person (`open == stuck`) instead of waiting for ever (ADR 0007)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from importkit import A, B, C, run_import, task


@pytest.fixture
def ready(cli, repo: Path) -> Path:
    assert cli(repo, "init").exit_code == 0
    return repo


def _hand_edit(cli, repo: Path, tasks: dict[str, list[str]]) -> None:
    """The tasks, added through michi, then given these dependencies by hand (`task modify` and `import`
    refuse a cycle), committed and pushed past the hook."""
    from conftest import git

    for uuid in tasks:
        assert run_import(cli, repo, [task(uuid)]).exit_code == 0
    for uuid, depends in tasks.items():
        path = next(p for p in git(repo, "ls-files", ".tasks").split() if p.endswith(f"{uuid}.json"))
        data = json.loads((repo / path).read_text())
        (repo / path).write_text(json.dumps({**data, "depends": depends}, indent=2) + "\n")
    git(repo, "commit", "-qam", "a hand edit", "--no-verify")
    git(repo, "push", "-q", "origin", "main")


def _no_ready(cli, repo: Path, *verb: str) -> dict[str, object]:
    answer = cli(repo, "--agent", "a1", "task", *verb, "--json")
    assert answer.exit_code == 3, answer.stdout + answer.stderr
    error: dict[str, object] = answer.json()["error"]
    assert error["code"] == "no_ready_task"
    return error


@pytest.mark.parametrize("verb", [["next", "--claim"], ["next"]])
def test_two_tasks_that_depend_on_each_other_are_stuck(cli, ready: Path, verb: list[str]) -> None:
    _hand_edit(cli, ready, {A: [B], B: [A]})
    error = _no_ready(cli, ready, *verb)
    assert (error["open"], error["cycle"], error["blocked"], error["stuck"]) == (2, 2, 0, 2), error
    assert "others hold it" not in str(error["hint"]), error
    hint = str(error["hint"])
    assert "a person must mend the dependencies" in hint and "michi doctor" in hint, error
    assert "dependency cycle" in str(error["message"]), error


def test_a_task_that_depends_on_itself_and_one_waiting_on_it_are_stuck(cli, ready: Path) -> None:
    _hand_edit(cli, ready, {A: [A], B: [A], C: []})
    assert cli(ready, "--agent", "b", "task", "claim", "3", "--json").exit_code == 0
    error = _no_ready(cli, ready, "next", "--claim")
    assert (error["open"], error["cycle"], error["claimed"], error["stuck"]) == (3, 2, 1, 2), error
    assert "ask again" in str(error["hint"]) and "2 need a person first" in str(error["hint"]), error


def test_a_cycle_through_a_held_task_waits_for_its_holder(cli, ready: Path) -> None:
    """Its holder can finish the held task (done needs no ready dependencies), which ends the cycle."""
    _hand_edit(cli, ready, {A: [B], B: [A]})
    assert cli(ready, "--agent", "b", "task", "claim", "1", "--json").exit_code == 0
    error = _no_ready(cli, ready, "next", "--claim")
    assert (error["cycle"], error["blocked"], error["claimed"], error["stuck"]) == (0, 2, 1, 0), error
    assert cli(ready, "--agent", "b", "task", "done", "1", "--json").exit_code == 0
    claimed = cli(ready, "--agent", "a1", "task", "next", "--claim", "--json")
    assert claimed.exit_code == 0 and claimed.json()["uuid"] == B, claimed.stdout


def test_mending_the_dependency_frees_the_cycle(cli, ready: Path) -> None:
    _hand_edit(cli, ready, {A: [B], B: [A]})
    assert _no_ready(cli, ready, "next", "--claim")["stuck"] == 2
    assert cli(ready, "task", "modify", "1", "--remove-depends", "2", "--json").exit_code == 0
    claimed = cli(ready, "--agent", "a1", "task", "next", "--claim", "--json")
    assert claimed.exit_code == 0 and claimed.json()["uuid"] == A, claimed.stdout
