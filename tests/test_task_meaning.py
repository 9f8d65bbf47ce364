"""Claims, states and fields mean one thing: a claim starts the task, tags split on commas as in
Taskwarrior, help names its metavars and what repeats, and every JSON timestamp has one format."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import git
from lockkit import new_lock

TW_TIME = re.compile(r"^\d{8}T\d{6}Z$")


@pytest.fixture
def ready(cli, repo: Path) -> Path:
    assert cli(repo, "init").exit_code == 0
    return repo


def test_start_by_the_claims_owner_is_a_no_op(cli, ready: Path, remote) -> None:
    cli(ready, "task", "add", "x")
    claimed = cli(ready, "--agent", "a1", "task", "claim", "1", "--json").json()
    assert claimed["state"] == "in_progress"
    head = remote.head()
    again = cli(ready, "--agent", "a1", "task", "start", "1", "--json")
    assert again.exit_code == 0, again.stdout
    assert again.json()["version"] == claimed["version"] and again.json()["state"] == "in_progress"
    assert remote.head() == head  # nothing committed
    assert again.json()["transaction"]["commit"] is None and "nothing changed" in again.stderr
    other = cli(ready, "--agent", "a2", "task", "start", "1", "--json")
    assert other.exit_code == 4 and other.json()["error"]["code"] == "claimed"


def test_comma_tags_split_as_in_taskwarrior(cli, ready: Path) -> None:
    added = cli(ready, "task", "add", "x", "-t", "backend,cleanup", "-t", "ops", "--json").json()
    assert added["tags"] == ["backend", "cleanup", "ops"]
    modified = cli(ready, "task", "modify", "1", "-t", "a,b", "--remove-tag", "backend,ops", "--json")
    assert modified.json()["tags"] == ["cleanup", "a", "b"]
    cli(ready, "task", "add", "y", "-t", "a")
    both = cli(ready, "task", "list", "-t", "a,b", "--json").json()
    assert [t["id"] for t in both] == [1]


@pytest.mark.parametrize(
    ("verb", "wanted"),
    [
        (["task", "add"], ["TEXT", "--tag TAG", "--depends ID", "repeatable", "H|M|L"]),
        (["task", "list"], ["--tag TAG", "--state STATE", "repeatable", "--no-fetch"]),
        (["task", "modify"], ["--tag TAG", "--remove-tag TAG", "--remove-depends ID"]),
        (["task", "claim"], ["in_progress"]),
        (["task", "next"], ["in_progress", "urgency", "open: 0", "--offline"]),
    ],
)
def test_help_names_metavars_and_what_repeats(cli, ready: Path, verb: list[str], wanted: list[str]) -> None:
    text = cli(ready, *verb, "--help").stdout
    flat = " ".join(text.split())
    for word in wanted:
        assert word in flat, (word, text)
    assert "<list[str]>" not in text


def test_every_timestamp_in_json_has_taskwarriors_format(cli, ready: Path) -> None:
    task = cli(ready, "--agent", "a", "task", "add", "x", "--json").json()
    claimed = cli(ready, "--agent", "a", "task", "claim", "1", "--json").json()
    for value in (task["entry"], task["modified"], claimed["start"], claimed["claim_expires"]):
        assert TW_TIME.match(value), value
    acquired = cli(ready, "--json", "lock", "acquire", "--ttl", "60").json()
    assert TW_TIME.match(acquired["expires"]), acquired
    holder = cli(ready, "--json", "lock", "status").json()["holder"]
    assert TW_TIME.match(holder["created"]) and TW_TIME.match(holder["expires"]), holder
    renewed = cli(ready, "--json", "lock", "renew", "--token", acquired["token"], "--ttl", "90").json()
    assert TW_TIME.match(renewed["expires"])
    cli(ready, "--json", "lock", "release", "--token", acquired["token"])
    held = new_lock(ready, command="task done 42")
    held.acquire(0)
    busy = cli(ready, "--json", "lock", "acquire", "--wait", "0").json()["error"]
    held.release()
    assert TW_TIME.match(busy["checked_at"]) and TW_TIME.match(busy["holder"]["created"]), busy
    assert git(ready, "status", "--porcelain") == ""
