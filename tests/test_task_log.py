"""`michi task log ID`: a task's history from the commits' Michi-* trailers, against real git."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
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


@pytest.mark.parametrize(
    "bad",
    [
        ', "x": ' + "[" * 100_000 + "]" * 100_000,
        ', "x": NaN',
        ', "x": 1e999',
        ', "project": "a\\ud800b"',
        ', "x": ' + "9" * 5000,
    ],
    ids=["deep", "nan", "infinity", "lone_surrogate", "huge_integer"],
)
def test_log_reads_a_past_version_that_was_corrupt(cli, repo: Path, bad: str) -> None:
    """History cannot be rewritten: a version someone once committed by hand (nested 100,000 deep, NaN, a
    lone surrogate), fixed since, must not stop `task log` of that task forever, nor put `NaN` (not JSON)
    into its --json document."""
    assert cli(repo, "init").exit_code == 0
    uuid = cli(repo, "task", "add", "fine", "--json").json()["uuid"]
    path = repo / ".tasks" / uuid[:2] / f"{uuid}.json"
    good = path.read_text()
    path.write_text(good.rstrip().removesuffix("}") + bad + "}\n")
    git(repo, "commit", "-qam", "a bad hand edit")
    path.write_text(good)
    git(repo, "commit", "-qam", "fixed by hand")
    git(repo, "push", "-q", "origin", "main")
    logged = cli(repo, "task", "log", "1", "--json")
    assert logged.exit_code == 0, logged.stdout
    entries = json.loads(logged.stdout, parse_constant=lambda name: pytest.fail(f"{name} in the output"))
    assert len(entries["entries"]) == 3
    assert cli(repo, "task", "log", "1").exit_code == 0


def test_words_others_wrote_reach_the_terminal_without_control_characters(cli, remote, repo: Path) -> None:
    """Commit trailers come from any clone, a refusing remote's words from its hooks: an escape sequence in
    them would clear the screen, retitle the window or write the clipboard of whoever reads the log."""
    assert cli(repo, "init").exit_code == 0
    uuid = cli(repo, "task", "add", "fine", "--json").json()["uuid"]
    path = repo / ".tasks" / uuid[:2] / f"{uuid}.json"
    path.write_text(path.read_text().replace('"fine"', '"fine!"'))
    hostile = "\x1b]0;PWNED\x07\x1b[2J\u202eevil\rx"
    git(repo, "commit", "-qam", f"hand\n\nMichi-Agent: {hostile}\nMichi-Host: \x1b[31mred")
    git(repo, "push", "-q", "origin", "main")
    logged = cli(repo, "task", "log", "1")
    assert logged.exit_code == 0 and "evil" in logged.stdout
    hook = remote.bare / "hooks" / "pre-receive"
    hook.write_text("#!/bin/sh\nprintf '\\033]52;c;cHduZWQ=\\007denied by policy\\n' >&2\nexit 1\n")
    hook.chmod(0o755)
    refused = cli(repo, "task", "add", "x")
    assert refused.exit_code == 5 and "denied by policy" in refused.stderr
    for text in (logged.stdout, logged.stderr, refused.stdout, refused.stderr):
        assert not any(c in text for c in "\x1b\x07\r\u202e"), text


def test_a_hostile_commit_stops_no_status_nor_stats(cli, repo: Path) -> None:
    """Any clone can push a commit whose subject holds the separators `git log`'s output is split on, and
    trailers with escape sequences: `status`, `stats` and the activity list must neither crash on it nor
    pass the escapes to the terminal."""
    assert cli(repo, "init").exit_code == 0
    uuid = cli(repo, "task", "add", "fine", "--json").json()["uuid"]
    path = repo / ".tasks" / uuid[:2] / f"{uuid}.json"
    path.write_text(path.read_text().replace('"todo"', '"in_progress"'))
    message = (
        "michi: task claim 1\x1fnot a time\x1fx\x1e" + "0" * 40 + "\x1fsoon\x1f\n\n"
        f"Michi-Txn: 0123abcd\nMichi-Agent: \x1b]0;PWNED\x07evil\nMichi-Task: {uuid}"
    )
    git(repo, "commit", "-qam", message)
    git(repo, "push", "-q", "origin", "main")
    for args in (("stats",), ("status",), ("stats", "--json"), ("status", "--json")):
        result = cli(repo, *args)
        assert result.exit_code == 0, (args, result.stdout, result.stderr)
        assert not any(c in result.stdout + result.stderr for c in "\x1b\x07"), args
