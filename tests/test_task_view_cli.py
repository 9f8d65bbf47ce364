"""`task list` and `task show` for people, end to end on a real repository (output captured: not a
terminal, so plain text and whole lines)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import git

from michi.tasks.query import VIEW_KEYS


@pytest.fixture
def linked(cli, repo: Path) -> Path:
    assert cli(repo, "init").exit_code == 0
    cli(repo, "task", "add", "Write the schema")
    cli(repo, "task", "add", "Migrate the data", "--depends", "1", "-p", "M")
    cli(repo, "task", "add", "Ship it", "--depends", "2")
    cli(repo, "task", "annotate", "2", "needs a maintenance window")
    cli(repo, "task", "done", "1")
    return repo


def test_show_names_dependencies_both_ways_and_keeps_its_json(cli, linked: Path) -> None:
    shown = cli(linked, "task", "show", "2")
    assert shown.exit_code == 0 and "\x1b" not in shown.stdout
    flat = " ".join(shown.stdout.split())
    assert "depends on 1 Write the schema (done)" in flat and "blocks 3 Ship it (todo)" in flat
    assert "needs a maintenance window" in flat and "UTC (" in flat  # exact, then relative
    assert "version 2: created" in flat and "changed once" in flat
    as_json = cli(linked, "task", "show", "2", "--json").json()
    assert list(as_json) == list(VIEW_KEYS) and as_json["depends"] == [1]


def test_list_for_people_plain_whole_and_counted(cli, linked: Path, monkeypatch) -> None:
    listed = cli(linked, "task", "list")
    lines = listed.stdout.splitlines()
    assert lines[0].split() == ["id", "age", "state", "pri", "deps", "description", "urg"]
    assert [line.split()[0] for line in lines[2:-1]] == ["2", "3"]  # 3 is blocked by 2: last
    assert "needs" not in listed.stdout and "Migrate the data [1]" in listed.stdout
    assert lines[-1] == "2 tasks, 1 blocked"
    monkeypatch.setenv("COLUMNS", "30")  # a pipe with a width asked for: cut to it
    narrow = cli(linked, "task", "list", "--no-color").stdout
    assert all(len(line) <= 30 for line in narrow.splitlines()) and "…" in narrow
    one = cli(linked, "task", "list", "--state", "done").stdout
    assert one.splitlines()[-1] == "1 task, 1 done"
    assert cli(linked, "task", "list", "--project", "nothing").stdout.startswith("no tasks")


HOSTILE = "\x1b[2J\x1b]0;PWNED\x07"


def test_no_escape_reaches_the_terminal_through_a_dependency(cli, repo: Path) -> None:
    """A task's text reaches people in other tasks' views too: `show` names each dependency (both ways)
    by its description, and a hand-committed `depends` entry that is no task's uuid is shown as it is."""
    assert cli(repo, "init").exit_code == 0
    cli(repo, "task", "add", f"upstream {HOSTILE}")
    cli(repo, "task", "add", "downstream", "--depends", "1")
    uuid = "0e4ab0a8-3c59-4d7e-9d2c-3b0d0f7a1c11"
    record = {"uuid": uuid, "michi_id": 3, "description": "odd", "status": "pending",
              "entry": "20250101T000000Z", "depends": [f"gone{HOSTILE}"]}  # fmt: skip
    (repo / ".tasks" / f"{uuid}.json").write_text(json.dumps(record))
    git(repo, "add", ".tasks")
    git(repo, "commit", "-qm", "a hand-made task", "--no-verify")
    git(repo, "push", "-q", "origin", "main")
    for args in (("task", "show", "2"), ("task", "show", "1"), ("task", "show", "3"), ("task", "list")):
        shown = cli(repo, *args)
        assert shown.exit_code == 0, (args, shown.stdout, shown.stderr)
        assert "\x1b" not in shown.stdout + shown.stderr and "\x07" not in shown.stdout, args
