"""The task commands against real git: a bare origin and clones (fixtures in conftest)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from conftest import git

from michi.tasks.query import VIEW_KEYS

CONTRACT = {
    "id", "uuid", "description", "status", "state", "priority", "tags", "project", "depends", "assignee",
    "claim_expires", "version", "domain", "entry", "modified", "start", "end", "annotations",
}  # fmt: skip


@pytest.fixture
def ready(cli, repo: Path) -> Path:
    assert cli(repo, "init").exit_code == 0
    return repo


def test_json_contract_is_pinned(cli, ready: Path) -> None:
    assert set(VIEW_KEYS) == CONTRACT
    added = cli(ready, "task", "add", "one", "-p", "h", "-t", "a", "--project", "p", "--json").json()
    assert set(added) == CONTRACT | {"transaction"} and added["transaction"]["pushed"] is True
    cli(ready, "task", "add", "two", "--depends", str(added["id"]))
    listed = cli(ready, "task", "list", "--json").json()
    assert isinstance(listed, list) and [set(t) for t in listed] == [CONTRACT, CONTRACT]
    assert listed[1]["depends"] == [added["id"]] and listed[0]["priority"] == "H"
    assert listed[0]["domain"] == "." and listed[0]["entry"].endswith("Z")
    shown = cli(ready, "task", "show", added["uuid"][:8], "--json").json()
    assert set(shown) == CONTRACT and shown["id"] == added["id"]


def test_a_uuid_prefix_of_digits_names_its_task_unless_it_is_an_id(cli, ready: Path, tmp_path: Path) -> None:
    # One uuid in forty starts with eight decimal digits: its short form must still name the task.
    first = cli(ready, "task", "add", "first", "--json").json()
    record = {"description": "imported", "status": "pending", "entry": "20260101T000000Z"}
    uuids = ["12345678-aaaa-4aaa-8aaa-aaaaaaaaaaaa", "0001bbbb-bbbb-4bbb-8bbb-bbbbbbbbbbbb"]
    (tmp_path / "tw.json").write_text(json.dumps([dict(record, uuid=u) for u in uuids]))
    assert cli(ready, "import", str(tmp_path / "tw.json")).exit_code == 0
    assert cli(ready, "task", "show", "12345678", "--json").json()["uuid"] == uuids[0]
    assert cli(ready, "task", "start", "12345678", "--json").json()["state"] == "in_progress"
    # An id wins over a uuid prefix of the same digits; more of the uuid names the other task.
    assert cli(ready, "task", "show", "0001", "--json").json()["uuid"] == first["uuid"]
    assert cli(ready, "task", "show", "0001b", "--json").json()["uuid"] == uuids[1]
    assert cli(ready, "task", "show", "99999999", "--json").exit_code == 3
    assert cli(ready, "task", "show", "\u00b2", "--json").exit_code == 3  # a digit to isdigit(), not int()


def test_init_reaches_the_remote_and_is_idempotent(cli, ready: Path, remote) -> None:
    files = git(remote.bare, "ls-tree", "-r", "--name-only", "main").split()
    assert {".michi.toml", ".michi/last-id", ".tasks/.keep"} <= set(files)
    again = cli(ready, "init", "--json")
    assert again.exit_code == 0 and again.json()["created"] == []


def test_lifecycle_transitions_and_exit_codes(cli, ready: Path) -> None:
    ident = str(cli(ready, "task", "add", "x", "--json").json()["id"])
    assert cli(ready, "task", "start", ident, "--json").json()["state"] == "in_progress"
    assert cli(ready, "task", "review", ident, "--json").json()["state"] == "review"
    done = cli(ready, "task", "done", ident, "--json").json()
    assert (done["state"], done["status"], done["version"]) == ("done", "completed", 4)
    bad = cli(ready, "task", "start", ident, "--json")
    assert bad.exit_code == 4 and bad.json()["error"]["code"] == "invalid_transition"
    assert "done" in bad.json()["error"]["message"]
    assert cli(ready, "task", "delete", ident, "--json").json()["status"] == "deleted"
    assert cli(ready, "task", "done", ident, "--json").exit_code == 4
    missing = cli(ready, "task", "show", "999", "--json")
    assert missing.exit_code == 3 and missing.json()["error"]["code"] == "task_not_found"
    assert cli(ready, "task", "list", "--json").json() == []
    assert len(cli(ready, "task", "list", "--state", "any", "--json").json()) == 1


def test_if_version_annotate_modify(cli, ready: Path) -> None:
    cli(ready, "task", "add", "x")
    stale = cli(ready, "task", "modify", "1", "--description", "y", "--if-version", "7", "--json")
    assert stale.exit_code == 4 and stale.json()["error"]["code"] == "version_mismatch"
    ok = cli(
        ready, "task", "modify", "1", "--description", "y", "-t", "t", "--if-version", "1", "--json"
    ).json()
    assert (ok["description"], ok["tags"], ok["version"]) == ("y", ["t"], 2)
    noted = cli(ready, "task", "annotate", "1", "a note", "--if-version", "2", "--json").json()
    assert noted["annotations"][0]["description"] == "a note" and noted["version"] == 3


def test_claims_need_an_agent_and_are_owner_validated(cli, ready: Path, monkeypatch) -> None:
    cli(ready, "task", "add", "x")
    nobody = cli(ready, "task", "claim", "1", "--json")
    assert nobody.exit_code == 2 and nobody.json()["error"]["code"] == "agent_required"
    assert cli(ready, "--agent", "a1", "task", "claim", "1", "--json").json()["assignee"] == "a1"
    taken = cli(ready, "--agent", "a2", "task", "claim", "1", "--json")
    assert taken.exit_code == 4 and "a1" in taken.json()["error"]["message"]
    monkeypatch.setenv("MICHI_AGENT", "a2")
    assert cli(ready, "task", "release", "1", "--json").exit_code == 4
    assert cli(ready, "task", "renew", "1", "--json").exit_code == 4
    monkeypatch.setenv("MICHI_AGENT", "a1")
    assert cli(ready, "task", "renew", "1", "--ttl", "0", "--json").json()["claim_expires"] is None
    assert cli(ready, "task", "release", "1", "--json").json()["state"] == "todo"
    assert cli(ready, "task", "next", "--claim", "--ttl", "600", "--json").json()["id"] == 1
    nothing = cli(ready, "task", "next", "--claim", "--json")
    assert nothing.exit_code == 3 and nothing.json()["error"]["code"] == "no_ready_task"


def test_reap_releases_expired_claims(cli, ready: Path, monkeypatch) -> None:
    cli(ready, "task", "add", "x")
    monkeypatch.setenv("MICHI_CLAIM_TTL", "1")
    cli(ready, "--agent", "a1", "task", "claim", "1")
    import michi.tasks.claims as claims_mod  # the clock is read by the commands; move it instead of sleeping

    real = claims_mod.Task.claim_holder
    monkeypatch.setattr(claims_mod.Task, "claim_holder", lambda self, now: real(self, now + 3600))
    reaped = cli(ready, "task", "reap", "--json").json()
    assert [t["state"] for t in reaped["tasks"]] == ["todo"] and reaped["transaction"]["pushed"]


def test_domains_nearest_folder_all_and_hostile(cli, ready: Path, tmp_path: Path) -> None:
    lib = ready / "libs" / "auth"
    (lib / ".tasks").mkdir(parents=True)
    assert cli(lib / ".tasks" / "..", "task", "add", "in lib", "--json").json()["domain"] == "libs/auth"
    assert cli(ready, "task", "add", "at root", "--json").json()["domain"] == "."
    assert [t["description"] for t in cli(lib, "task", "list", "--json").json()] == ["in lib"]
    assert len(cli(ready, "task", "list", "--all", "--json").json()) == 2
    outside = tmp_path / "outside"
    outside.mkdir()
    (ready / "link").symlink_to(outside)
    (ready / "inner").mkdir()
    (ready / "inner" / "up").symlink_to(ready)
    for hostile in ("../..", str(outside), "link", "inner/up", ".git", "libs/auth/.tasks", "nope"):
        result = cli(ready, "task", "add", "x", "--domain", hostile, "--json")
        assert result.exit_code == 2, hostile
        assert result.json()["error"]["code"] == "bad_domain"


def test_corrupt_files_reported_never_overwritten(cli, ready: Path, remote) -> None:
    cli(ready, "task", "add", "good")
    other = remote.clone("hand")
    uuid = "00000000-0000-4000-8000-00000000abcd"
    (other / ".tasks" / f"{uuid}.json").write_text('{"uuid": "x", <<<<<<< oops\n')
    git(other, "add", ".")
    git(other, "commit", "-qm", "hand edit")
    git(other, "push", "-q")
    listed = cli(ready, "task", "list", "--fetch", "--json")
    assert [t["description"] for t in listed.json()] == ["good"] and "michi doctor" in listed.stderr
    # An export (a backup, the input of Taskwarrior's import) left the task out without a word.
    exported = cli(ready, "export", "--all", "--json")
    assert [t["description"] for t in exported.json()] == ["good"] and "michi doctor" in exported.stderr
    assert "michi doctor" in cli(ready, "export").stderr
    report = cli(ready, "doctor", "--json").json()
    assert report["ok"] is False and uuid in report["problems"][0]["path"]
    said = cli(ready, "doctor").stdout
    assert said.count(uuid) == 1 and "conflict markers" in said  # the path named once, then the cause
    refused = cli(ready, "task", "done", uuid[:13], "--json")
    assert refused.exit_code == 4 and refused.json()["error"]["code"] == "corrupt_task"
    assert cli(ready, "task", "done", "1", "--json").exit_code == 0
    assert "<<<<<<< oops" in git(remote.bare, "show", f"main:.tasks/{uuid}.json")


def test_offline_then_sync(cli, ready: Path, remote) -> None:
    before = remote.head()
    out = cli(ready, "task", "add", "later", "--offline", "--json").json()
    assert out["transaction"]["pushed"] is False and remote.head() == before
    assert cli(ready, "sync", "--json").exit_code == 0
    assert "later" in git(remote.bare, "grep", "-h", "later", "main", "--", ".tasks")


def test_reads_after_a_recent_sync_make_no_network_call(cli, ready: Path, remote) -> None:
    cli(ready, "task", "add", "x")  # the transaction synced just now
    os.rename(remote.bare, remote.bare.with_suffix(".gone"))
    assert len(cli(ready, "task", "list", "--json").json()) == 1
    assert cli(ready, "task", "show", "1", "--json").exit_code == 0
    assert cli(ready, "task", "next", "--offline", "--json").json()["id"] == 1
    assert json.loads(cli(ready, "export", "--json").stdout)[0]["michi_id"] == 1
    assert cli(ready, "task", "list", "--fetch", "--json").exit_code == 5


def test_init_hook_installs_the_pre_commit_hook(cli, repo: Path) -> None:
    result = cli(repo, "init", "--hook", "--json")
    assert result.exit_code == 0, result.stdout
    assert (repo / ".git" / "hooks" / "pre-commit").is_file()


def test_a_dependency_cycle_is_refused_so_agents_never_wait_on_it(cli, ready: Path, remote) -> None:
    """Two tasks depending on each other are both blocked for ever, and `next` says to wait: agents would
    loop on it. As Taskwarrior does, a dependency that closes a cycle is refused (exit 2) naming it."""
    cli(ready, "task", "add", "a")
    cli(ready, "task", "add", "b", "--depends", "1")
    cli(ready, "task", "add", "c", "--depends", "2")
    before = remote.head()
    for ref, dep in (("1", "3"), ("1", "2"), ("2", "3")):
        refused = cli(ready, "task", "modify", ref, "--depends", dep, "--json")
        assert refused.exit_code == 2, refused.stdout
        error = refused.json()["error"]
        assert error["code"] == "dependency_cycle" and f"task {ref}" in error["message"], error
    assert remote.head() == before
    claimed = cli(ready, "--agent", "x", "task", "next", "--claim", "--json")
    assert claimed.exit_code == 0 and claimed.json()["id"] == 1


def test_an_empty_note_is_refused_and_commits_nothing(cli, ready: Path, remote) -> None:
    cli(ready, "task", "add", "x")
    before = remote.head()
    for text in ("", "   ", "\n"):
        empty = cli(ready, "task", "annotate", "1", text, "--json")
        assert empty.exit_code == 2 and empty.json()["error"]["code"] == "usage", empty.stdout
    assert remote.head() == before
    assert cli(ready, "task", "show", "1", "--json").json()["annotations"] == []
