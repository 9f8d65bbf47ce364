"""A symlink committed at a task file's path (ADR 0006: task files are plain files). git stores the text
of its target as its blob: a target that reads as task JSON was listed, exported and handed out by
`next --claim`, whose tree edit then refused it (exit 4 `not_michis_path`) for every agent, for ever."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from conftest import Remote, git

LINKED = "1e4ab0a8-3c59-4d7e-9d2c-3b0d0f7a1c12"


@pytest.fixture
def linked(cli, repo: Path) -> str:
    """A repository with one real task (id 2) and, at id 1's path, a symlink whose target is task JSON."""
    assert cli(repo, "init").exit_code == 0
    path = f".tasks/{LINKED[:2]}/{LINKED}.json"
    record = {
        "uuid": LINKED,
        "michi_id": 1,
        "description": "a link",
        "status": "pending",
        "entry": "20250101T000000Z",
        "priority": "H",
    }
    (repo / path).parent.mkdir(parents=True)
    os.symlink(json.dumps(record), repo / path)
    (repo / ".michi" / "last-id").write_text("1\n")
    git(repo, "add", "-f", path, ".michi/last-id")
    git(repo, "commit", "-qm", "a symlink committed as a task file")
    git(repo, "push", "-q", "origin", "main")
    assert cli(repo, "task", "add", "a real task").exit_code == 0
    return path


def test_a_symlink_is_never_read_as_a_task(cli, repo: Path, remote: Remote, linked: str) -> None:
    listed = cli(repo, "--json", "task", "list")
    assert [t["description"] for t in listed.json()] == ["a real task"]
    assert [t["description"] for t in cli(repo, "--json", "export").json()] == ["a real task"]
    claimed = cli(repo, "--json", "--agent", "bot1", "task", "next", "--claim")
    assert claimed.exit_code == 0 and claimed.json()["id"] == 2, claimed.stdout
    again = cli(repo, "--json", "--agent", "bot2", "task", "next", "--claim")
    assert again.exit_code == 3, again.stdout
    assert again.json()["error"]["unreadable"] == 1, again.stdout
    assert git(remote.bare, "ls-tree", "main", "--", linked).startswith("120000 ")  # left as it was


def test_doctor_names_the_symlink_and_its_fix(cli, repo: Path, linked: str) -> None:
    report = cli(repo, "--json", "doctor").json()
    assert not report["ok"]
    assert [p["path"] for p in report["problems"]] == [linked]
    assert "a symbolic link, not a task file" in report["problems"][0]["problem"]
    assert "replace it with a real file or remove it" in report["problems"][0]["problem"]
    shown = cli(repo, "task", "list")
    assert "1 task file(s) could not be read" in shown.stdout + shown.stderr


def test_a_file_that_becomes_a_symlink_is_seen_to(cli, repo: Path) -> None:
    """The index is brought up by the tree's diff: the same bytes as a symlink are no task any more."""
    assert cli(repo, "init").exit_code == 0
    uuid = cli(repo, "--json", "task", "add", "one").json()["uuid"]
    assert cli(repo, "task", "add", "two").exit_code == 0
    assert len(cli(repo, "--json", "task", "list").json()) == 2  # the index is cached now
    path = repo / ".tasks" / uuid[:2] / f"{uuid}.json"
    text = path.read_text()
    path.unlink()
    os.symlink(text, path)
    git(repo, "add", "-f", path.relative_to(repo).as_posix())
    git(repo, "commit", "-qm", "made a symlink")
    git(repo, "push", "-q", "origin", "main")
    assert [t["description"] for t in cli(repo, "--json", "task", "list").json()] == ["two"]
