"""`michi sync` says what became of pending work: renumbered offline tasks, refused offline operations,
and michi commits stranded on the local branch by a damaged journal (ADR 0004)."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import CliResult, Remote, git, run_michi
from txnkit import assert_exactly_once

from michi.tasks import create
from michi.workflow.mutation import ApplyContext

Cli = Callable[..., CliResult]


@pytest.fixture
def ready(cli: Cli, repo: Path) -> Path:
    assert cli(repo, "init").exit_code == 0
    assert cli(repo, "task", "add", "base 1").exit_code == 0
    assert cli(repo, "task", "add", "base 2").exit_code == 0
    return repo


def test_sync_names_each_renumbered_offline_task(cli: Cli, remote: Remote, ready: Path) -> None:
    mine = cli(ready, "task", "add", "my offline task", "--offline", "--json").json()
    assert mine["id"] == 3  # provisional
    other = remote.clone("other")
    assert cli(other, "task", "add", "someone else's task", "--json").json()["id"] == 3

    synced = cli(ready, "sync", "--json")
    assert synced.exit_code == 0, synced.stdout
    body = synced.json()
    assert body["renumbered"] == [
        {"uuid": mine["uuid"], "old": 3, "new": 4, "command": body["renumbered"][0]["command"]}
    ]
    assert body["recovered"] == 1 and body["refused"] == []
    assert "1 task(s) renumbered" in body["message"]
    assert cli(ready, "task", "show", mine["uuid"], "--json").json()["id"] == 4
    assert_exactly_once(remote.bare)


@pytest.mark.parametrize("how", ["queued offline", "online, before any sync"])
def test_work_on_an_offline_task_by_its_provisional_id_stays_on_that_task(
    cli: Cli, remote: Remote, ready: Path, how: str
) -> None:
    """The id michi printed for an offline add names that task for what is done by it before the add
    lands. Another clone took the number meanwhile: the note and the `done` went to its task, which then
    had that id, while the user's own stayed open (sync said only that the add was renumbered)."""
    mine = cli(ready, "task", "add", "my offline task", "--offline", "--json").json()
    offline = ["--offline"] if how == "queued offline" else []
    if offline:
        assert cli(ready, "task", "annotate", "3", "my note", *offline).exit_code == 0
    other = remote.clone("other")
    theirs = cli(other, "task", "add", "someone else's task", "--json").json()
    assert theirs["id"] == 3
    done = cli(ready, "task", "done", "3", *offline, "--json")
    assert done.exit_code == 0, done.stdout
    if offline:
        synced = cli(ready, "sync", "--json").json()
        assert [(r["old"], r["new"]) for r in synced["renumbered"]] == [(3, 4)]  # said once, not per op
    else:
        assert done.json()["uuid"] == mine["uuid"] and done.json()["id"] == 4
    shown = cli(ready, "task", "show", mine["uuid"], "--json").json()
    assert (shown["id"], shown["state"]) == (4, "done")
    assert [a["description"] for a in shown["annotations"]] == (["my note"] if offline else [])
    left = cli(ready, "task", "show", theirs["uuid"], "--json").json()
    assert (left["id"], left["state"], left["annotations"]) == (3, "todo", [])
    assert_exactly_once(remote.bare)


def test_a_branch_left_behind_names_michis_commits_to_leave_out_of_the_rebase(
    cli: Cli, remote: Remote, ready: Path
) -> None:
    """Offline work below the user's own commit, which clashes with the remote: the branch is left as it
    was, with "run `git pull --rebase`". Rebased as it is, the offline commit (made again on the remote,
    renumbered) conflicted in `.michi/last-id` and the task file; the note now names it, to leave out."""
    cli(ready, "task", "add", "mine", "--offline")
    offline = git(ready, "rev-parse", "HEAD")
    (ready / "README.md").write_text("my line\n")
    git(ready, "commit", "-qam", "my readme")
    other = remote.clone("other")
    assert cli(other, "task", "add", "theirs").exit_code == 0
    (other / "README.md").write_text("their line\n")
    git(other, "commit", "-qam", "their readme")
    git(other, "push", "-q", "origin", "main")
    synced = cli(ready, "sync", "--json")
    assert synced.exit_code == 0, synced.stdout
    note = next(n for n in synced.json()["notes"] if "could not safely replay" in n)
    assert offline[:10] in note and "leave them out" in note, note
    assert git(ready, "show", "HEAD:README.md") == "my line"  # the user's commit, as it was


def test_sync_human_output_shows_old_and_new_id(cli: Cli, remote: Remote, ready: Path) -> None:
    cli(ready, "task", "add", "my offline task", "--offline")
    cli(remote.clone("other"), "task", "add", "theirs")
    synced = cli(ready, "sync")
    assert synced.exit_code == 0
    assert "task 3 (added offline) is now task 4" in synced.stdout


@pytest.mark.parametrize("json_mode", [False, True])
def test_refused_offline_operation_is_reported_and_counted(
    cli: Cli, remote: Remote, ready: Path, json_mode: bool
) -> None:
    assert cli(ready, "--agent", "x", "task", "claim", "2", "--offline").exit_code == 0
    assert cli(ready, "task", "add", "offline new", "--offline").exit_code == 0
    assert cli(remote.clone("other"), "--agent", "y", "task", "claim", "2").exit_code == 0

    synced = cli(ready, "sync", *(["--json"] if json_mode else []))
    assert synced.exit_code == 4  # part of the pending work did not land: a conflict, as for the command
    if json_mode:
        body = synced.json()
        assert body["recovered"] == 1 and len(body["refused"]) == 1 and body["renumbered"] == []
        refused = body["refused"][0]
        assert refused["code"] == "claimed" and "claimed by y" in refused["reason"]
        assert refused["command"]  # the command line (in-process runs see pytest's argv)
        assert "pushed 1 pending change(s); 1 pending change(s) could not be applied" in body["message"]
    else:
        assert "pushed 1 pending change(s)" in synced.stdout
        assert "` was not applied: task 2 is claimed by y" in synced.stdout
    shown = cli(ready, "task", "show", "2", "--json").json()
    assert (shown["state"], shown["assignee"]) == ("in_progress", "y")
    assert not (ready / ".git/michi/journal.json").exists()  # nothing is pending any more
    assert_exactly_once(remote.bare)


def test_sync_with_nothing_pending_is_quiet(cli: Cli, ready: Path) -> None:
    synced = cli(ready, "sync", "--json")
    assert synced.exit_code == 0
    assert synced.json()["message"] == "synced main with origin"
    assert (synced.json()["recovered"], synced.json()["refused"], synced.json()["renumbered"]) == (0, [], [])


class _Tree:
    """Just enough of a TaskTree for `add`: files by path."""

    def __init__(self, files: dict[str, bytes]) -> None:
        self.files = files

    commit = tree_oid = None

    def read(self, path: str, limit: int | None = None) -> bytes | None:
        data = self.files.get(path)
        return data if data is None or limit is None else data[: limit + 1]

    def kind(self, path: str) -> str | None:
        if path in self.files:
            return "blob"
        return "tree" if any(p.startswith(path + "/") for p in self.files) else None


def test_add_applied_again_never_overwrites_the_task(tmp_path: Path) -> None:
    ctx = ApplyContext(now=1_700_000_000.0, agent=None, host="h", state_dir=str(tmp_path))
    uuid = "00000000-0000-4000-8000-000000000001"
    params: dict[str, Any] = {"uuid": uuid, "description": "x", "domain": "."}
    first = create.add(_Tree({}), params, ctx)  # type: ignore[arg-type]
    tree = _Tree(dict(first.writes))
    record = json.loads(first.writes[first.result[0]["path"]])
    record["michi_state"], record["michi_version"] = "done", 2  # another clone changed it since
    tree.files[first.result[0]["path"]] = json.dumps(record).encode()
    again = create.add(tree, params, ctx)  # type: ignore[arg-type]
    assert again.empty
    assert again.result[0]["record"]["michi_version"] == 2 and again.ids == {params["uuid"]: 1}


def test_git_log_of_sync_is_one_commit_per_operation(cli: Cli, remote: Remote, ready: Path) -> None:
    cli(ready, "task", "add", "a", "--offline")
    cli(ready, "task", "annotate", "1", "note", "--offline")
    assert cli(ready, "sync").exit_code == 0
    subjects = git(remote.bare, "log", "--format=%s", "main").splitlines()
    assert subjects[:2] == ["michi: task annotate 1", "michi: task add 3"]
    assert_exactly_once(remote.bare)


# --- a damaged journal must not strand offline work -----------------------------------------------------


def _damage_journal(repo: Path) -> None:
    journal = repo / ".git/michi/journal.json"
    journal.write_bytes(journal.read_bytes()[:20])


def test_damaged_journal_offline_work_is_completed_by_sync(cli: Cli, remote: Remote, ready: Path) -> None:
    added = cli(ready, "task", "add", "OFFLINE WORK", "--offline", "--json").json()
    _damage_journal(ready)
    synced = cli(ready, "sync", "--json")
    assert synced.exit_code == 0, synced.stdout
    body = synced.json()
    assert body["recovered"] == 1 and "pushed 1 pending change(s)" in body["message"]
    assert any("journal could not be read" in n for n in body["notes"])
    assert any("only on your local branch" in n for n in body["notes"])
    assert (ready / ".git/michi/journal.corrupt").exists()  # the evidence is kept
    shown = cli(ready, "task", "show", added["uuid"], "--json").json()
    assert (shown["id"], shown["description"]) == (3, "OFFLINE WORK")
    assert git(ready, "rev-parse", "HEAD") == remote.head()  # nothing left behind locally
    assert_exactly_once(remote.bare)


def _twice(journal: dict[str, Any]) -> None:
    journal["entries"].append(dict(journal["entries"][0]))


def _set(key: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def edit(journal: dict[str, Any]) -> None:
        journal["entries"][0][key] = value

    return edit


@pytest.mark.parametrize(
    "edit",
    [
        _twice,
        _set("txn", ""),
        _set("txn", ["not", "an", "id"]),
        _set("base", ["x"]),
        _set("commit", 5),
        _set("state", "weird"),
        _set("ids", {"x": "1"}),
        _set("agent", {"name": "x"}),
        # a file under .git names what the engine imports and calls: only michi's own apply functions
        _set("mutation", {"apply": "os:system", "params": {}}),
        _set("mutation", {"apply": "michi.tasks.create:nope", "params": {}}),
        _set("mutation", {"apply": ["michi.tasks.create:add"], "params": {}}),
    ],
    ids=[
        "entry_twice",
        "empty_txn",
        "txn_not_text",
        "base_not_text",
        "commit_not_text",
        "unknown_state",
        "id_not_a_number",
        "agent_not_text",
        "apply_os_system",
        "apply_unknown",
        "apply_not_text",
    ],
)
def test_a_journal_that_parses_but_is_damaged_lands_the_work_once(
    cli: Cli, remote: Remote, ready: Path, edit: Callable[[dict[str, Any]], None]
) -> None:
    """Valid JSON in the wrong shape is a damaged journal too: kept as evidence, and the offline work on
    the local branch lands exactly once; it never stops every later command, never lands twice."""
    cli(ready, "task", "annotate", "1", "offline note", "--offline")
    path = ready / ".git/michi/journal.json"
    journal = json.loads(path.read_text())
    edit(journal)
    path.write_text(json.dumps(journal))
    synced = cli(ready, "sync", "--json")
    assert synced.exit_code == 0, synced.stdout
    assert_exactly_once(remote.bare)
    shown = cli(ready, "task", "show", "1", "--json").json()
    assert (shown["version"], [a["description"] for a in shown["annotations"]]) == (2, ["offline note"])
    assert cli(ready, "task", "add", "later", "--json").exit_code == 0
    assert git(ready, "rev-parse", "HEAD") == remote.head()


def test_a_journal_base_git_no_longer_has_still_finds_what_landed(
    cli: Cli, remote: Remote, ready: Path
) -> None:
    """An entry's base (the remote tip when it began) may be gone from the object store (the remote was
    rewritten and the clone pruned): what landed is then looked for in the whole history, not refused
    with `bad object` by every later command."""
    cli(ready, "task", "annotate", "1", "offline note", "--offline")
    path = ready / ".git/michi/journal.json"
    journal = json.loads(path.read_text())
    journal["entries"][0]["base"] = "0123456789abcdef0123456789abcdef01234567"
    path.write_text(json.dumps(journal))
    synced = cli(ready, "sync", "--json")
    assert synced.exit_code == 0, synced.stdout
    assert synced.json()["recovered"] == 1
    shown = cli(ready, "task", "show", "1", "--json").json()
    assert (shown["version"], [a["description"] for a in shown["annotations"]]) == (2, ["offline note"])
    assert_exactly_once(remote.bare)


def test_damaged_journal_work_that_cannot_be_replayed_exits_5_with_the_way_out(
    cli: Cli, remote: Remote, ready: Path
) -> None:
    cli(ready, "task", "add", "OFFLINE WORK", "--offline")
    _damage_journal(ready)
    assert cli(remote.clone("other"), "task", "add", "took id 3").exit_code == 0
    before = {"remote": remote.head(), "local": git(ready, "rev-parse", "HEAD")}
    synced = cli(ready, "sync", "--json")
    assert synced.exit_code == 5
    error = synced.json()["error"]
    assert error["code"] == "stranded_commits"
    assert "michi: task add 3" in error["message"] and ".michi/last-id" in error["message"]
    assert "git log" in error["hint"] and "git rebase -i origin/main" in error["hint"]
    assert {"remote": remote.head(), "local": git(ready, "rev-parse", "HEAD")} == before
    human = cli(ready, "sync")
    assert human.exit_code == 5 and "never reached origin/main" in human.stderr


def test_lost_journal_after_the_push_landed_drops_the_local_copy(
    cli: Cli, remote: Remote, ready: Path
) -> None:
    cli(ready, "task", "add", "offline", "--offline")
    assert cli(remote.clone("other"), "task", "add", "elsewhere").exit_code == 0  # so sync rebuilds it
    killed = run_michi(ready, "sync", env={"MICHI_FAULT": "pushed"})
    assert killed.exit_code == -9  # landed on the remote; the local branch still has the offline commit
    assert git(ready, "rev-parse", "main") != remote.head()
    (ready / ".git/michi/journal.json").unlink()
    synced = cli(ready, "sync", "--json")
    assert synced.exit_code == 0, synced.stdout
    assert "already landed" in synced.json()["message"]
    assert git(ready, "rev-parse", "HEAD") == remote.head()
    assert_exactly_once(remote.bare)


# --- a lock file in git's way is named as such ---------------------------------------------------------


def test_stale_remote_tracking_ref_lock_is_named_not_called_unreachable(
    cli: Cli, remote: Remote, ready: Path
) -> None:
    assert cli(remote.clone("other"), "task", "add", "moves the remote").exit_code == 0
    lock = ready / ".git/refs/remotes/origin/main.lock"
    lock.touch()
    synced = cli(ready, "sync", "--json")
    assert synced.exit_code == 5
    error = synced.json()["error"]
    assert error["code"] == "git_lock_held" and "cannot reach" not in error["message"]
    assert "refs/remotes/origin/main" in error["message"] and str(lock) in error["hint"]
    lock.unlink()  # the fix the hint names
    assert cli(ready, "sync").exit_code == 0


def test_held_index_lock_is_named_not_called_local_changes(cli: Cli, remote: Remote, ready: Path) -> None:
    lock = ready / ".git/index.lock"
    lock.touch()
    offline = cli(ready, "task", "add", "x", "--offline", "--json")
    assert offline.exit_code == 5
    error = offline.json()["error"]
    assert error["code"] == "git_lock_held" and "changes" not in error["message"]
    assert "the index" in error["message"] and str(lock) in error["hint"]
    online = cli(ready, "task", "add", "y", "--json")  # lands; only the local update must wait
    assert online.exit_code == 0
    notes = " ".join(online.json()["transaction"]["notes"])
    assert "index.lock exists" in notes and "work tree has changes" not in notes
    lock.unlink()
    assert cli(ready, "sync").exit_code == 0
    assert git(ready, "rev-parse", "HEAD") == remote.head()
    assert git(ready, "status", "--porcelain") == ""


def test_engine_reports_a_refused_pending_operation_once(remote: Remote) -> None:
    from test_txn import drive, names_on

    mine, other = remote.clone("mine"), remote.clone("other")
    assert drive(mine, "x", "--offline", "--refuse").returncode == 0
    assert drive(mine, "y", "--offline").returncode == 0
    assert drive(other, "x").returncode == 0
    proc = drive(mine, "-", "--sync")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = json.loads(proc.stdout)
    assert out["recovered"] == 1 and [r["code"] for r in out["refused"]] == ["conflict"]
    assert sum("was not applied" in n for n in out["notes"]) == 1
    assert names_on(remote.bare) == ["x", "y"]


@pytest.mark.parametrize("how", ["renamed", "configured"])
def test_a_remote_that_is_not_there_is_a_config_error_not_local_work(
    cli: Cli, remote: Remote, ready: Path, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    """A clone whose remote is not the configured one (named `upstream`, or `remote` misspelled) is not a
    purely local repository: a change there would exit 0 and never reach the others, and `sync` would say
    there is nothing to sync. It is refused (exit 2, `bad_config`) naming the remotes there are."""
    if how == "renamed":
        git(ready, "remote", "rename", "origin", "upstream")
    else:
        monkeypatch.setenv("MICHI_REMOTE", "orgin")
    before = {"remote": remote.head(), "local": git(ready, "rev-parse", "HEAD")}
    for args in (
        ("task", "add", "x"),
        ("task", "done", "1"),
        ("--agent", "a", "task", "next", "--claim"),
        ("sync",),
    ):
        result = cli(ready, *args, "--json")
        assert result.exit_code == 2, (args, result.stdout)
        error = result.json()["error"]
        assert (
            error["code"] == "bad_config"
            and ("upstream" if how == "renamed" else "origin") in error["message"]
        )
    assert {"remote": remote.head(), "local": git(ready, "rev-parse", "HEAD")} == before
    assert cli(ready, "task", "list", "--json").exit_code == 0  # reading the local branch is harmless


def test_work_a_damaged_journal_no_longer_names_is_still_offline_unpushed(cli: Cli, ready: Path) -> None:
    """With the journal damaged, offline work is only a michi commit on the local branch that `sync` will
    find: the health check must still say it is there, not `healthy` while it may never reach anyone."""
    cli(ready, "task", "add", "OFFLINE WORK", "--offline")
    _damage_journal(ready)
    for _ in range(2):  # the second time the journal is already kept aside as journal.corrupt
        check = cli(ready, "status", "--check", "--json")
        assert check.exit_code == 32, check.stdout
        assert [p["code"] for p in check.json()] == ["offline_unpushed"]
        assert cli(ready, "task", "list", "--json").exit_code == 0
    assert cli(ready, "sync", "--json").exit_code == 0
    assert cli(ready, "status", "--check", "--json").exit_code == 0


def test_offline_work_rewritten_on_the_local_branch_lands_once(cli: Cli, remote: Remote, ready: Path) -> None:
    """The user rewrites the offline commit on the local branch (`git commit --amend`, or the
    `git pull --rebase` a note suggests): the commit carrying its `Michi-Txn` is the operation, done. The
    next offline command must not apply it again, nor name it twice in the journal (which a later
    command would take for a damaged one), and sync must land it once."""
    cli(ready, "task", "annotate", "1", "offline note", "--offline")
    before = git(ready, "rev-parse", "HEAD")
    git(ready, "commit", "--amend", "--no-edit", "-q", env={"GIT_COMMITTER_DATE": "2001-01-01T00:00:00Z"})
    assert git(ready, "rev-parse", "HEAD") != before
    assert cli(ready, "task", "annotate", "2", "second note", "--offline").exit_code == 0
    entries = json.loads((ready / ".git/michi/journal.json").read_text())["entries"]
    txns = [e["txn"] for e in entries]
    assert len(txns) == len(set(txns)), txns
    synced = cli(ready, "sync", "--json")
    assert synced.exit_code == 0, synced.stdout
    assert not any("journal could not be read" in n for n in synced.json()["notes"])
    assert_exactly_once(remote.bare)
    for ident, note in (("1", "offline note"), ("2", "second note")):
        shown = cli(ready, "task", "show", ident, "--json").json()
        assert [a["description"] for a in shown["annotations"]] == [note]
    assert git(ready, "rev-parse", "HEAD") == remote.head()


@pytest.mark.parametrize("offline", [False, True], ids=["pushed", "offline"])
def test_a_michi_commit_amended_with_the_users_change_is_never_dropped(
    cli: Cli, remote: Remote, ready: Path, offline: bool
) -> None:
    """michi moves the checked-out branch itself, so HEAD is often michi's last commit: a user's
    `git commit -a --amend` puts their own change into it. That commit is theirs now: `sync` dropped it
    whole as michi's, already landed (pushed) or applied again (offline), their change with it."""
    cli(ready, "task", "add", "mine", *(["--offline"] if offline else []))
    (ready / "mine.txt").write_text("my precious line\n")
    git(ready, "add", "mine.txt")
    git(ready, "commit", "-q", "--amend", "--no-edit")
    synced = cli(ready, "sync", "--json")
    assert synced.exit_code == 0, synced.stdout
    assert (ready / "mine.txt").read_text() == "my precious line\n"
    assert git(ready, "show", "HEAD:mine.txt") == "my precious line"
    assert git(ready, "status", "--porcelain") == ""
    assert "mine.txt" not in git(remote.bare, "log", "--format=", "--name-only", "main")
    assert any("left as it was" in n for n in synced.json()["notes"]), synced.json()
    assert_exactly_once(remote.bare)


def test_a_damaged_journal_never_pushes_a_users_file_amended_into_offline_work(
    cli: Cli, remote: Remote, ready: Path
) -> None:
    """Offline work amended with a private file, then the journal damaged: the commit bearing the
    `Michi-Txn` is the user's now. `sync` replayed every path it changed onto the remote, the private file
    too ("Nothing of the user's is pushed")."""
    cli(ready, "task", "add", "offline", "--offline")
    (ready / "private.txt").write_text("secret\n")
    git(ready, "add", "private.txt")
    git(ready, "commit", "-q", "--amend", "--no-edit")
    _damage_journal(ready)
    synced = cli(ready, "sync", "--json")
    assert synced.exit_code in (0, 5), synced.stdout
    assert "private.txt" not in git(remote.bare, "log", "--format=", "--name-only", "main")
    assert git(ready, "show", "HEAD:private.txt") == "secret"
    assert (ready / "private.txt").read_text() == "secret\n"


def test_offline_work_dropped_by_a_reset_is_named_once_and_lands_once(
    cli: Cli, remote: Remote, ready: Path
) -> None:
    """`git reset --hard HEAD~1` drops an offline commit: the next offline command applies that work again
    and named it twice in the journal, which the command after took for a damaged one (kept aside, the
    work then stranded: `sync` exit 5 once another clone had added a task)."""
    cli(ready, "task", "add", "offline A", "--offline")
    git(ready, "reset", "-q", "--hard", "HEAD~1")
    cli(ready, "task", "add", "offline B", "--offline")
    entries = json.loads((ready / ".git/michi/journal.json").read_text())["entries"]
    txns = [e["txn"] for e in entries]
    assert len(txns) == len(set(txns)) == 2, entries
    assert cli(remote.clone("other"), "task", "add", "elsewhere").exit_code == 0
    synced = cli(ready, "sync", "--json")
    assert synced.exit_code == 0, synced.stdout
    assert not (ready / ".git/michi/journal.corrupt").exists()
    listed = cli(ready, "task", "list", "--json").json()
    assert sorted(t["description"] for t in listed) == [
        "base 1",
        "base 2",
        "elsewhere",
        "offline A",
        "offline B",
    ]
    assert_exactly_once(remote.bare)


@pytest.mark.parametrize(
    "damage",
    [{"tags": [{"a": 1}]}, {"priority": "Z"}, {"description": ""}],
    ids=["tags", "priority", "empty"],
)
def test_a_journal_entry_whose_input_no_reader_accepts_is_refused_not_pushed(
    cli: Cli, remote: Remote, ready: Path, damage: dict[str, Any]
) -> None:
    """An entry's parameters never checked by the command line (hand-edited, damaged): `sync` wrote and
    pushed a task file its own readers, in every clone, then called corrupt."""
    cli(ready, "task", "add", "offline one", "--offline")
    path = ready / ".git/michi/journal.json"
    journal = json.loads(path.read_text())
    journal["entries"][0]["mutation"]["params"].update(damage)
    path.write_text(json.dumps(journal))
    head = remote.head()
    synced = cli(ready, "sync", "--json")
    assert synced.exit_code == 4, synced.stdout
    assert [r["code"] for r in synced.json()["refused"]] == ["corrupt_task"]
    assert remote.head() == head
    assert cli(ready, "doctor", "--json").json()["problems"] == []


POLICY_HOOK = """#!/bin/sh
while read old new ref; do
  if git diff "$old" "$new" | grep -q FORBIDDEN; then echo "policy: no FORBIDDEN words" >&2; exit 1; fi
done
"""


@pytest.mark.parametrize("pending", ["offline", "killed"])
def test_pending_work_the_remote_refuses_never_takes_other_commands_down(
    cli: Cli, remote: Remote, ready: Path, pending: str
) -> None:
    """A pending operation (offline, or journaled by a killed michi) that the remote's policy refuses rode
    on every later command's push: each failed, exit 5, blamed for it, and nothing named the pending one.
    Now the command's own change is pushed alone and says what stays pending; `sync` names it."""
    hook = remote.bare / "hooks" / "pre-receive"
    hook.write_text(POLICY_HOOK)
    hook.chmod(0o755)
    if pending == "offline":
        assert cli(ready, "task", "annotate", "1", "a FORBIDDEN word", "--offline").exit_code == 0
    else:
        killed = run_michi(
            ready, "task", "annotate", "1", "a FORBIDDEN word", env={"MICHI_FAULT": "committed"}
        )
        assert killed.exit_code == -9
    for name in ("innocent 1", "innocent 2"):
        added = cli(ready, "task", "add", name, "--json")
        assert added.exit_code == 0, added.stdout
        notes = added.json()["transaction"]["notes"]
        assert any("also carried" in n and "no FORBIDDEN words" in n for n in notes), added.stdout
        # what landed is what this clone reads: the branch moved onto it (the pending one's own offline
        # commit kept it back, and reads missed the very task just added)
        assert cli(ready, "task", "show", str(added.json()["id"]), "--json").exit_code == 0
        assert git(ready, "rev-parse", "HEAD") == remote.head()
    synced = cli(ready, "sync", "--json")
    assert synced.exit_code == 5 and synced.json()["error"]["code"] == "remote_rejected"
    assert "the push carried this clone's pending" in synced.json()["error"]["message"]
    listed = cli(ready, "task", "list", "--json", "--fetch").json()
    assert sorted(t["description"] for t in listed) == ["base 1", "base 2", "innocent 1", "innocent 2"]
    assert "FORBIDDEN" not in git(remote.bare, "log", "-p", "main")
    hook.unlink()  # the policy lifted: the pending note lands, once
    assert cli(ready, "sync", "--json").exit_code == 0
    shown = cli(ready, "task", "show", "1", "--json").json()
    assert [a["description"] for a in shown["annotations"]] == ["a FORBIDDEN word"]
    assert_exactly_once(remote.bare)


@pytest.mark.parametrize("kind", ["fifo", "dev_zero", "folder", "corrupt_is_a_folder"])
def test_a_journal_that_is_no_regular_file_is_kept_aside_without_hanging(
    remote: Remote, ready: Path, kind: str
) -> None:
    """Whatever sits at the journal's path (a FIFO, a symlink to an endless device, a folder), reading it
    neither hangs nor exhausts memory: it is a damaged journal, kept aside, and the offline work on the
    local branch lands exactly once. Nor does a folder already at the kept-aside name stop that."""
    assert run_michi(ready, "task", "add", "OFFLINE WORK", "--offline").exit_code == 0
    path = ready / ".git/michi/journal.json"
    if kind == "corrupt_is_a_folder":
        (ready / ".git/michi/journal.corrupt").mkdir()
        (ready / ".git/michi/journal.corrupt" / "old").write_text("x\n")
        path.write_text("{not json")
    else:
        path.unlink()
        {"fifo": lambda: os.mkfifo(path), "dev_zero": lambda: path.symlink_to("/dev/zero"),
         "folder": lambda: path.mkdir()}[kind]()  # fmt: skip
    assert run_michi(ready, "status", "--json", timeout=30).exit_code == 0
    listed = run_michi(ready, "task", "list", "--json", timeout=30)  # offline work is still listed
    assert "OFFLINE WORK" in [t["description"] for t in listed.json()], listed.stdout
    synced = run_michi(ready, "sync", "--json", timeout=30)
    assert synced.exit_code == 0, synced.stdout + synced.stderr
    assert any("journal could not be read" in n for n in synced.json()["notes"]), synced.stdout
    assert_exactly_once(remote.bare)
    assert "OFFLINE WORK" in git(remote.bare, "log", "-p", "main")
    assert run_michi(ready, "task", "add", "later", timeout=30).exit_code == 0
    assert git(ready, "rev-parse", "HEAD") == remote.head()


def test_every_apply_function_michi_journals_may_be_read_back() -> None:
    """The journal names only `APPLY`'s functions (ADR 0004): each one michi's commands transact with is
    among them (one left out would leave its journaled work unrecoverable), and each is importable."""
    import importlib
    import re

    from michi.workflow.mutation import APPLY

    source = Path(__file__).resolve().parent.parent / "michi"
    named = {m for f in source.rglob("*.py") for m in re.findall(r'Mutation\("([\w.]+:\w+)"', f.read_text())}
    assert named and named <= APPLY
    for apply in (a for a in APPLY if a.startswith("michi.")):  # the tests' driver allows its own
        module, name = apply.split(":")
        assert callable(getattr(importlib.import_module(module), name))
