"""A task layout this michi does not know (`.michi/layout` naming a newer michi's) is refused by every
command, reading or changing, with one line and exit 2 `unknown_layout` (ADR 0006): read as flat, an
older michi would miss the newer layout's tasks and write new ones where the newer michi never looks.
Nothing lands, and work still pending stays pending for the michi that knows the layout."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import Remote, git

NEWER = "fanout3"


def _newer_layout(clone: Path) -> None:
    """What a newer michi's commit of its layout marker leaves on the remote."""
    (clone / ".michi" / "layout").write_text(f"{NEWER}\n")
    git(clone, "commit", "-qam", "michi: a newer layout")
    git(clone, "push", "-q", "origin", "main")


@pytest.fixture
def newer(cli, remote: Remote) -> Path:
    """A clone with one task whose remote then got a newer layout (this clone synced it)."""
    repo = remote.clone("work")
    assert cli(repo, "init").exit_code == 0
    assert cli(repo, "task", "add", "one").exit_code == 0
    _newer_layout(repo)
    return repo


def _refused(result) -> None:
    assert result.exit_code == 2, (result.stdout, result.stderr)
    error = result.json()["error"]
    assert error["code"] == "unknown_layout", error
    assert error["message"] == (
        f"this repository uses task layout {NEWER!r}, newer than this michi: upgrade michi"
    )
    assert error["hint"] and "\n" not in error["message"]


@pytest.mark.parametrize(
    "command",
    [
        ["task", "list", "--no-fetch"],
        ["task", "list", "--all", "--fetch"],
        ["task", "show", "1", "--no-fetch"],
        ["task", "next", "--offline"],
        ["export"],
        ["doctor"],
        ["task", "add", "two"],
        ["task", "done", "1"],
        ["task", "next", "--claim", "--agent", "a1"],
        ["task", "reap"],
        ["migrate"],
        ["init"],
    ],
)
def test_every_command_refuses_a_layout_it_does_not_know(cli, remote: Remote, newer: Path, command) -> None:
    before = remote.head()
    _refused(cli(newer, "--json", *command))
    assert remote.head() == before
    assert git(remote.bare, "show", "main:.michi/layout") == NEWER


def test_an_import_is_refused_before_anything_lands(cli, remote: Remote, newer: Path) -> None:
    source = newer.parent / "tw.json"
    record = {"uuid": "00000000-0000-4000-8000-00000000000a", "description": "a", "status": "pending"}
    source.write_text(json.dumps([{**record, "entry": "20240101T000000Z"}]))
    before = remote.head()
    _refused(cli(newer, "--json", "import", str(source)))
    assert remote.head() == before


def test_a_layout_changed_since_the_last_sync_is_refused_on_the_fresh_tree(cli, remote: Remote) -> None:
    """This clone's last sync saw a layout it knows; inside the lock the fresh tree has a newer one."""
    mine = remote.clone("mine")
    assert cli(mine, "init").exit_code == 0
    assert cli(mine, "task", "add", "one").exit_code == 0
    other = remote.clone("other")
    _newer_layout(other)
    before = remote.head()
    _refused(cli(mine, "--json", "task", "add", "two"))
    _refused(cli(mine, "--json", "migrate"))
    assert remote.head() == before


def test_pending_offline_work_stays_pending(cli, remote: Remote) -> None:
    mine = remote.clone("mine")
    assert cli(mine, "init").exit_code == 0
    assert cli(mine, "task", "add", "written offline", "--offline").exit_code == 0
    journal = mine / ".git" / "michi" / "journal.json"
    assert "written offline" in journal.read_text()
    _newer_layout(remote.clone("other"))
    before = remote.head()
    _refused(cli(mine, "--json", "sync"))
    assert remote.head() == before
    assert "written offline" in journal.read_text()


@pytest.mark.parametrize("marker", ["fanout\n", "flat\n", "\n"])
def test_only_a_layout_this_michi_does_not_know_is_refused(cli, remote: Remote, marker: str) -> None:
    """A known layout, or an empty marker (as no marker: flat), works as before; the same repository
    with a newer layout's name is refused."""
    repo = remote.clone("work")
    assert cli(repo, "init").exit_code == 0
    (repo / ".michi" / "layout").write_text(marker)
    git(repo, "commit", "-qam", "layout", check=False)
    git(repo, "push", "-q", "origin", "main")
    assert cli(repo, "task", "add", "one").exit_code == 0
    assert cli(repo, "--json", "task", "list").json()[0]["description"] == "one"
    _newer_layout(repo)
    _refused(cli(repo, "--json", "task", "list"))
