"""An id wins over a uuid prefix of the same digits on the remote's current state, not on a clone's
stale snapshot: a changing command resolves its reference again on the fresh tree, inside the lock."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import Remote, git

PREFIXED = "50001111-2222-4333-8444-555566667777"  # a uuid that starts with the digits of an id


@pytest.fixture
def clones(cli, remote: Remote, tmp_path: Path) -> tuple[Path, Path]:
    """`first` holds task 1 and the task whose uuid starts with 5000 (task 2); `stale` has synced them
    and then fetches nothing more while `first` adds task 5000."""
    first = remote.clone("first")
    assert cli(first, "init").exit_code == 0
    assert cli(first, "task", "add", "one").exit_code == 0
    record = {"uuid": PREFIXED, "description": "innocent", "status": "pending", "entry": "20250101T000000Z"}
    (tmp_path / "tw.json").write_text(json.dumps([record]))
    assert cli(first, "import", str(tmp_path / "tw.json")).exit_code == 0
    stale = remote.clone("stale")
    assert sorted(t["id"] for t in cli(stale, "task", "list", "--json").json()) == [1, 2]
    (first / ".michi" / "last-id").write_text("4999\n")
    git(first, "commit", "-qam", "the counter moves on", "--no-verify")
    git(first, "push", "-q", "origin", "main")
    added = cli(first, "task", "add", "task five thousand", "--json").json()
    assert added["id"] == 5000
    return first, stale


def _states(cli, repo: Path) -> dict[int, str]:
    listed = cli(repo, "task", "list", "--state", "any", "--fetch", "--json").json()
    return {t["id"]: t["state"] for t in listed}


@pytest.mark.parametrize("verb", [["done"], ["start"], ["annotate", "noted"]])
def test_an_id_only_the_remote_knows_wins_over_a_local_uuid_prefix(cli, clones, verb) -> None:
    _first, stale = clones
    answer = cli(stale, "task", verb[0], "5000", *verb[1:], "--json")
    assert answer.exit_code == 0, answer.stdout + answer.stderr
    assert answer.json()["id"] == 5000 and answer.json()["uuid"] != PREFIXED, answer.stdout
    states = _states(cli, stale)
    assert states[2] == "todo", states  # the task whose uuid merely starts with 5000 is untouched
    if verb[0] != "annotate":
        assert states[5000] != "todo", states
    # Digits that are no task's id on the fresh tree still name the uuid they start.
    prefixed = cli(stale, "task", "start", PREFIXED[:8], "--json")
    assert prefixed.exit_code == 0 and prefixed.json()["uuid"] == PREFIXED, prefixed.stdout + prefixed.stderr
