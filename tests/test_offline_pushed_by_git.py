"""An offline add that reached the remote through the user's own git, not `michi sync` (ADR 0007).

The everyday `git pull --rebase && git push` (or a merging `git pull`) publishes michi's provisional
offline commit: the rebase is clean, as both sides moved `.michi/last-id` alike. When another clone took
the same id meanwhile, the remote held two tasks with one id, and the next sync only said the change "had
already landed". Now the next online michi command gives the offline task a fresh id, in a commit of its
own, once; the task that landed first keeps the number.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import CliResult, Remote, git, run_michi
from txnkit import assert_exactly_once

from michi.workflow import recovery
from michi.workflow.journal import STARTED, Entry
from michi.workflow.mutation import Mutation

Cli = Callable[..., CliResult]


@pytest.fixture
def ready(cli: Cli, repo: Path) -> Path:
    assert cli(repo, "init").exit_code == 0
    assert cli(repo, "task", "add", "one").exit_code == 0
    return repo


def _offline_add(cli: Cli, clone: Path, text: str) -> dict[str, object]:
    added = cli(clone, "task", "add", text, "--offline", "--json")
    assert added.exit_code == 0, added.stdout
    body: dict[str, object] = added.json()
    return body


def _code_commit(clone: Path, name: str) -> None:
    (clone / name).write_text("code\n")
    git(clone, "add", name)
    git(clone, "commit", "-qm", f"my {name}")


def _pull_and_push(clone: Path, how: str) -> None:
    """The user's own git, as in a shell: no michi involved."""
    git(clone, "pull", "-q", "--rebase" if how == "rebase" else "--no-rebase", "--no-edit", "origin", "main")
    git(clone, "push", "-q", "origin", "main")


def _ids_on_remote(cli: Cli, remote: Remote) -> dict[str, int]:
    """description -> id of every task on the remote's branch, read by a fresh clone."""
    reader = remote.clone(f"reader{len(list(remote.root.glob('reader*')))}")
    tasks = cli(reader, "task", "list", "--all", "--json").json()
    return {t["description"]: t["id"] for t in tasks}


def _doctor_clean(cli: Cli, clone: Path) -> None:
    doctor = cli(clone, "doctor", "--fetch", "--json")
    assert doctor.exit_code == 0 and doctor.json()["problems"] == [], doctor.stdout


def _shared_id(cli: Cli, remote: Remote, ready: Path, how: str) -> dict[str, object]:
    """The defect's scenario up to the user's push: the remote then holds two tasks with id 2."""
    mine = _offline_add(cli, ready, "mine offline")
    assert mine["id"] == 2  # provisional
    assert cli(remote.clone("other"), "task", "add", "theirs", "--json").json()["id"] == 2
    _code_commit(ready, "code.txt")
    _pull_and_push(ready, how)
    return mine


@pytest.mark.parametrize("how", ["rebase", "merge"])
def test_sync_renumbers_an_offline_add_the_users_git_push_landed(
    cli: Cli, remote: Remote, ready: Path, how: str
) -> None:
    mine = _shared_id(cli, remote, ready, how)
    synced = cli(ready, "sync", "--json")
    assert synced.exit_code == 0, synced.stdout
    body = synced.json()
    assert [(r["uuid"], r["old"], r["new"]) for r in body["renumbered"]] == [(mine["uuid"], 2, 3)]
    assert "1 task(s) renumbered" in body["message"]
    assert _ids_on_remote(cli, remote) == {"one": 1, "theirs": 2, "mine offline": 3}
    assert git(remote.bare, "show", "main:.michi/last-id") == "3"
    subjects = git(remote.bare, "log", "--format=%s", "main").splitlines()
    assert subjects.count("michi: task renumber 2 to 3") == 1
    _doctor_clean(cli, ready)
    done = cli(ready, "task", "done", "2", "--json")  # was `ambiguous_id`
    assert done.exit_code == 0 and done.json()["description"] == "theirs", done.stdout
    assert_exactly_once(remote.bare)
    assert not (ready / ".git/michi/journal.json").exists()
    assert git(ready, "status", "--porcelain") == ""


def test_any_changing_command_renumbers_it_and_says_so(cli: Cli, remote: Remote, ready: Path) -> None:
    mine = _shared_id(cli, remote, ready, "rebase")
    added = cli(ready, "task", "add", "later", "--json")
    assert added.exit_code == 0, added.stdout
    assert added.json()["id"] == 4
    note = f"task 2 (added offline) is now task 3: another clone took 2 meanwhile (uuid {mine['uuid']})"
    assert note in added.json()["transaction"]["notes"]
    assert _ids_on_remote(cli, remote) == {"one": 1, "theirs": 2, "mine offline": 3, "later": 4}
    _doctor_clean(cli, ready)
    assert_exactly_once(remote.bare)
    again = cli(ready, "sync", "--json").json()  # said once: nothing is pending any more
    assert again["renumbered"] == [] and again["message"] == "synced main with origin"

    _offline_add(cli, ready, "solo")  # pushed with git too, but no other task took its id: kept
    git(ready, "push", "-q", "origin", "main")
    before = remote.head()
    synced = cli(ready, "sync", "--json")
    assert synced.exit_code == 0 and synced.json()["renumbered"] == [], synced.stdout
    assert remote.head() == before  # nothing to push
    assert _ids_on_remote(cli, remote)["solo"] == 5


@pytest.mark.parametrize("first_sync", ["the later clone", "the earlier clone"])
def test_the_task_that_landed_first_keeps_the_id(
    cli: Cli, remote: Remote, ready: Path, first_sync: str
) -> None:
    """Two clones added offline with the same provisional id, and each pushed it with git: the one whose
    commit the other's was rebased onto keeps it, whichever clone syncs first."""
    other = remote.clone("other")
    early = _offline_add(cli, other, "early")
    late = _offline_add(cli, ready, "late")
    assert early["id"] == late["id"] == 2
    git(other, "push", "-q", "origin", "main")
    _pull_and_push(ready, "rebase")
    order = [ready, other] if first_sync == "the later clone" else [other, ready]
    said = {}
    for clone in order:
        synced = cli(clone, "sync", "--json")
        assert synced.exit_code == 0, synced.stdout
        said[clone] = [(r["uuid"], r["old"], r["new"]) for r in synced.json()["renumbered"]]
    assert said == {ready: [(late["uuid"], 2, 3)], other: []}
    assert _ids_on_remote(cli, remote) == {"one": 1, "early": 2, "late": 3}
    _doctor_clean(cli, other)
    assert_exactly_once(remote.bare)


@pytest.mark.parametrize("fault", ["committed", "pushed"])
def test_a_renumbering_killed_midway_lands_once(cli: Cli, remote: Remote, ready: Path, fault: str) -> None:
    """SIGKILLed after the renumbering was journaled (its push not started) or after it landed (the local
    branch not moved): the next command finishes it, and it is on the remote exactly once."""
    _shared_id(cli, remote, ready, "rebase")
    killed = run_michi(ready, "sync", env={"MICHI_FAULT": fault})
    assert killed.exit_code == -9, killed.stderr
    synced = run_michi(ready, "sync", "--json")
    assert synced.exit_code == 0, synced.stderr
    assert _ids_on_remote(cli, remote) == {"one": 1, "theirs": 2, "mine offline": 3}
    subjects = git(remote.bare, "log", "--format=%s", "main").splitlines()
    assert subjects.count("michi: task renumber 2 to 3") == 1
    again = run_michi(ready, "sync", "--json")
    assert again.exit_code == 0 and again.json()["renumbered"] == []
    assert remote.head() == git(ready, "rev-parse", "main")
    _doctor_clean(cli, ready)
    assert_exactly_once(remote.bare)


def test_the_usual_recovery_path_asks_git_nothing_more(tmp_path: Path) -> None:
    """Only an offline entry found landed is looked at: a dead holder's landed push costs no git process
    (the repository is never touched here)."""
    entry = Entry("ab12", Mutation("michi.tasks.create:add", {}), "task add x", None, STARTED, ids={"u": 2})
    assert recovery.renumberings(None, tmp_path, "f" * 40, [entry], {"ab12": "e" * 40}) == []  # type: ignore[arg-type]
    offline = entry.but(state="offline")
    assert recovery.renumberings(None, tmp_path, "f" * 40, [offline], {}) == []  # type: ignore[arg-type]
