"""What an agent acts on is the remote's state: `next` fetches, `list`/`show` refresh when the last sync is
older than read_max_age, every read says which state it answered from, and `no_ready_task` tells
"all work is finished" from "work remains, held by others"."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

COUNTS = ("open", "blocked", "claimed", "mine", "review", "waiting")


@pytest.fixture
def dev(cli, remote) -> Path:
    """A developer's clone that set michi up; `remote.clone(...)` gives the agents' clones."""
    path = remote.clone("dev")
    assert cli(path, "init").exit_code == 0
    return path


def _counts(result) -> dict[str, int]:
    return {k: result.json()["error"][k] for k in COUNTS}


def test_next_in_a_clone_that_never_fetched_sees_the_remotes_tasks(cli, remote) -> None:
    agent = remote.clone("agent")  # cloned before michi was set up and before any task existed
    dev = remote.clone("dev")
    cli(dev, "init")
    cli(dev, "task", "add", "ready on the remote", "-p", "H")
    got = cli(agent, "--agent", "a", "task", "next", "--json")
    assert got.exit_code == 0 and got.json()["description"] == "ready on the remote"
    assert got.json()["urgency"] == 6.0  # priority H, nothing else yet
    assert "fetched just now" in got.stderr and "--fetch" not in got.stderr


def test_next_never_offers_a_task_another_clone_finished(cli, remote, dev: Path) -> None:
    cli(dev, "task", "add", "one")
    cli(dev, "task", "add", "two")
    agent = remote.clone("agent")
    assert cli(agent, "--agent", "a", "task", "next", "--claim", "--json").json()["id"] == 1
    assert cli(agent, "--agent", "a", "task", "done", "1", "--json").exit_code == 0
    offered = cli(dev, "--agent", "dev", "task", "next", "--json")  # dev's last sync predates the done
    assert offered.json()["id"] == 2
    stale = cli(dev, "--agent", "dev", "task", "next", "--offline", "--json")
    assert stale.json()["id"] == 2 and "not fetched (offline)" in stale.stderr


def test_next_without_the_remote_fails_and_says_how_old_this_clone_is(cli, remote, dev: Path) -> None:
    cli(dev, "task", "add", "x")
    os.rename(remote.bare, remote.bare.with_suffix(".gone"))
    failed = cli(dev, "task", "next", "--json")
    assert failed.exit_code == 5 and failed.json()["error"]["code"] == "remote_unreachable"
    assert "last synced" in failed.stderr and "--offline" in failed.stderr
    assert cli(dev, "task", "next", "--offline", "--json").json()["id"] == 1


def test_list_and_show_refresh_when_the_last_sync_is_older_than_read_max_age(
    cli, remote, dev: Path, monkeypatch
) -> None:
    agent = remote.clone("agent")
    assert cli(agent, "task", "list", "--json").json() == []  # never synced: fetches first
    cli(dev, "task", "add", "new on the remote")
    recent = cli(agent, "task", "list", "--json")  # synced moments ago: answers from the cache
    assert recent.json() == [] and "--fetch to refresh now" in recent.stderr
    monkeypatch.setenv("MICHI_READ_MAX_AGE", "0")  # every read is "too old": fetch
    fresh = cli(agent, "task", "list", "--json")
    assert [t["description"] for t in fresh.json()] == ["new on the remote"]
    assert "fetched just now" in fresh.stderr and "--fetch" not in fresh.stderr
    cli(dev, "task", "add", "another")
    assert cli(agent, "task", "show", "2", "--json").json()["description"] == "another"
    offline = cli(agent, "task", "list", "--no-fetch", "--json")
    assert len(offline.json()) == 2 and "not fetched" in offline.stderr
    os.rename(remote.bare, remote.bare.with_suffix(".gone"))
    fallback = cli(agent, "task", "list", "--json")  # an automatic refresh that fails: the last sync
    assert fallback.exit_code == 0 and len(fallback.json()) == 2
    assert "could not refresh" in fallback.stderr
    assert cli(agent, "task", "list", "--fetch", "--json").exit_code == 5  # asked for: an error


def test_a_last_sync_in_the_future_is_not_fresh(cli, remote, dev: Path) -> None:
    """The clock stepped back after the last sync (or its mark was copied with a later time): a read
    fetches, rather than answering from the old state until the clock catches up."""
    agent = remote.clone("agent")
    assert cli(agent, "task", "list", "--json").json() == []
    cli(dev, "task", "add", "new on the remote")
    mark = agent / ".git" / "michi" / "synced"
    later = mark.stat().st_mtime + 3600
    os.utime(mark, (later, later))
    fresh = cli(agent, "task", "list", "--json")
    assert [t["description"] for t in fresh.json()] == ["new on the remote"]
    assert "fetched just now" in fresh.stderr


def test_the_as_of_note_comes_with_errors_too(cli, dev: Path) -> None:
    missing = cli(dev, "task", "show", "99", "--json")
    assert missing.exit_code == 3 and "tasks as" in missing.stderr
    fetched = cli(dev, "task", "show", "99", "--fetch", "--json")
    assert "fetched just now" in fetched.stderr and "--fetch" not in fetched.stderr
    nothing = cli(dev, "--agent", "a", "task", "next", "--json")
    assert nothing.exit_code == 3 and "fetched just now" in nothing.stderr


def test_read_max_age_is_validated(cli, dev: Path, monkeypatch) -> None:
    monkeypatch.setenv("MICHI_READ_MAX_AGE", "soon")
    bad = cli(dev, "task", "list", "--json")
    assert bad.exit_code == 2 and "MICHI_READ_MAX_AGE" in bad.json()["error"]["message"]


def test_no_ready_task_says_whether_to_wait_or_stop(cli, remote, dev: Path) -> None:
    cli(dev, "task", "add", "A", "-p", "H")
    cli(dev, "task", "add", "B", "-p", "H", "--depends", "1")
    a1, a2 = remote.clone("a1"), remote.clone("a2")
    assert cli(a1, "--agent", "a1", "task", "next", "--claim", "--json").json()["id"] == 1
    waiting = cli(a2, "--agent", "a2", "task", "next", "--claim", "--json")
    plain = cli(a2, "--agent", "a2", "task", "next", "--json")
    assert waiting.exit_code == plain.exit_code == 3
    assert waiting.json()["error"] == plain.json()["error"]  # one message for next and next --claim
    assert _counts(waiting) == {"open": 2, "blocked": 1, "claimed": 1, "mine": 0, "review": 0, "waiting": 0}
    assert "again" in waiting.json()["error"]["hint"] and "hour" not in waiting.json()["error"]["hint"]
    mine = cli(a1, "--agent", "a1", "task", "next", "--claim", "--json")
    assert _counts(mine)["mine"] == 1 and "your own" in mine.json()["error"]["hint"]
    cli(a1, "--agent", "a1", "task", "done", "1")
    assert cli(a1, "--agent", "a1", "task", "next", "--claim", "--json").json()["id"] == 2
    cli(a1, "--agent", "a1", "task", "review", "2")
    review = cli(a2, "--agent", "a2", "task", "next", "--json")
    assert _counts(review)["review"] == 1 and _counts(review)["open"] == 1
    cli(a1, "--agent", "a1", "task", "done", "2")
    finished = cli(a2, "--agent", "a2", "task", "next", "--claim", "--json")
    assert finished.exit_code == 3 and _counts(finished) == dict.fromkeys(COUNTS, 0)
    assert "all work is finished" in finished.json()["error"]["message"]
    assert finished.json()["error"] == cli(a2, "--agent", "a2", "task", "next", "--json").json()["error"]
