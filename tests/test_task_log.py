"""`michi task log ID`: a task's history from the commits' Michi-* trailers, against real git."""

from __future__ import annotations

from pathlib import Path

from conftest import git


def test_log_shows_when_who_which_command_what_changed(cli, repo: Path, remote) -> None:
    assert cli(repo, "init").exit_code == 0
    cli(repo, "task", "add", "x", "-t", "a")
    cli(repo, "task", "add", "unrelated")
    cli(repo, "--agent", "bot", "task", "claim", "1")
    cli(repo, "--agent", "bot", "task", "modify", "1", "-p", "H")
    cli(repo, "--agent", "bot", "task", "done", "1")
    log = cli(repo, "task", "log", "1", "--json")
    assert log.exit_code == 0, log.stdout
    entries = log.json()["entries"]
    assert [e["command"] for e in entries] == ["task add 1", "task claim 1", "task modify 1", "task done 1"]
    assert [e["agent"] for e in entries] == [None, "bot", "bot", "bot"]
    assert [e["version"] for e in entries] == [1, 2, 3, 4]
    assert entries[0]["changes"]["description"] == {"from": None, "to": "x"}
    assert entries[1]["changes"]["state"] == {"from": "todo", "to": "in_progress"}
    assert entries[1]["changes"]["assignee"] == {"from": None, "to": "bot"}
    assert set(entries[2]["changes"]) == {"priority"}  # modified/version are bookkeeping, not changes
    assert entries[3]["changes"]["state"]["to"] == "done" and entries[3]["host"]
    assert entries[3]["commit"] == git(remote.bare, "rev-parse", "main")
    assert all(len(e["when"]) == 16 and e["txn"] for e in entries)
    human = cli(repo, "task", "log", "1")
    assert "task claim 1  by bot" in human.stdout and 'state: "todo" -> "in_progress"' in human.stdout
    missing = cli(repo, "task", "log", "9", "--json")
    assert missing.exit_code == 3 and "tasks as" in missing.stderr
