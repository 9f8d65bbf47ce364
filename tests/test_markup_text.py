"""Text from tasks, notes and git is shown to people as it is, never read as rich markup: `[/]` in a tag
once crashed `task add`'s view with exit 1 *after* the task was pushed, so an agent or a script saw a
failure for a change that had landed (and a retry added it twice)."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import git, run_michi

MARKUP = "[/]"


@pytest.fixture
def ready(cli, repo: Path) -> Path:
    assert cli(repo, "init").exit_code == 0
    return repo


def test_markup_in_a_task_is_shown_as_text_and_the_exit_code_tells_the_truth(ready: Path) -> None:
    added = run_michi(
        ready, "task", "add", "a [bold]x[/bold]", "-t", MARKUP, "--project", "[i]p", env={"COLUMNS": "120"}
    )
    assert added.exit_code == 0, added.stderr
    assert MARKUP in added.stdout and "[i]p" in added.stdout
    assert len(git(ready, "ls-tree", "-r", "--name-only", "origin/main", ".tasks").split()) == 2
    note = run_michi(ready, "task", "annotate", "1", "see [link=x]here[/link] and [/]")
    assert note.exit_code == 0, note.stderr
    shown = run_michi(ready, "task", "show", "1", env={"COLUMNS": "120"})
    assert shown.exit_code == 0, shown.stderr
    assert "[link=x]here[/link] and [/]" in shown.stdout
