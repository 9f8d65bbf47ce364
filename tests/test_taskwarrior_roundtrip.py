"""michi export -> Taskwarrior 2.6 `task import`, `task export` -> michi import: nothing lost, no id changed.

Uses the real `task` binary with TASKDATA/TASKRC in the test's temp dir; skipped without it unless
MICHI_REQUIRE_TASKWARRIOR=1 (CI), where a missing binary fails.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import git
from twkit import taskwarrior


@pytest.fixture
def tw(tmp_path: Path) -> Callable[..., str]:
    return taskwarrior(tmp_path)


def _populate(cli, repo: Path) -> None:
    assert cli(repo, "init").exit_code == 0
    (repo / "libs" / "auth" / ".tasks").mkdir(parents=True)
    cli(repo, "task", "add", 'quote " and ü', "-p", "H", "-t", "a", "-t", "b", "--project", "p.sub")
    cli(repo, "task", "add", "in a domain", "--domain", "libs/auth", "--depends", "1")
    cli(repo, "task", "annotate", "1", "a note")
    cli(repo, "--agent", "bot", "task", "claim", "2")
    cli(repo, "task", "add", "finished")
    cli(repo, "task", "done", "3")
    cli(repo, "task", "add", "gone")
    cli(repo, "task", "delete", "4")


def test_round_trip_loses_nothing(cli, repo: Path, remote, tw, tmp_path: Path) -> None:
    _populate(cli, repo)
    exported = cli(repo, "export", "--all")
    assert exported.exit_code == 0
    (tmp_path / "michi.json").write_text(exported.stdout)
    tw("import", str(tmp_path / "michi.json"))
    (tmp_path / "back.json").write_text(tw("export"))
    before = remote.head()
    back = cli(repo, "import", str(tmp_path / "back.json"), "--json").json()
    assert (back["added"], back["modified"], back["problems"]) == ([], [], [])
    assert sorted(back["skipped"]) == [1, 2, 3, 4]
    assert remote.head() == before  # nothing changed, so nothing was committed
    again = cli(repo, "export", "--all").stdout
    assert again == exported.stdout


def test_changes_made_in_taskwarrior_come_back(cli, repo: Path, remote, tw, tmp_path: Path) -> None:
    _populate(cli, repo)
    (tmp_path / "michi.json").write_text(cli(repo, "export", "--all").stdout)
    tw("import", str(tmp_path / "michi.json"))
    uuid1 = cli(repo, "task", "show", "1", "--json").json()["uuid"]
    tw(uuid1, "modify", "+fromtw")
    tw("add", "born in taskwarrior", "priority:L")
    (tmp_path / "back.json").write_text(tw("export"))
    report = cli(repo, "import", str(tmp_path / "back.json"), "--json").json()
    assert report["modified"] == [1] and report["added"] == [5]
    one = cli(repo, "task", "show", "1", "--json").json()
    assert one["tags"] == ["a", "b", "fromtw"] and one["id"] == 1 and one["version"] == 3
    five = cli(repo, "task", "show", "5", "--json").json()
    assert (five["description"], five["priority"], five["domain"]) == ("born in taskwarrior", "L", ".")
    assert "import 2 tasks" in git(remote.bare, "log", "-1", "--format=%s", "main")


def _json_of(cli, repo: Path, *args: str):
    result = cli(repo, *args, "--json")
    assert result.exit_code == 0, result.stdout + result.stderr
    return result.json()


def _to_taskwarrior(cli, repo: Path, tw, tmp_path: Path) -> None:
    (tmp_path / "michi.json").write_text(cli(repo, "export", "--all").stdout)
    tw("import", str(tmp_path / "michi.json"))


def _back(tw, tmp_path: Path) -> str:
    path = tmp_path / "back.json"
    path.write_text(tw("export"))
    return str(path)


def test_an_older_export_never_reverts_newer_michi_work(cli, repo: Path, remote, tw, tmp_path: Path) -> None:
    assert cli(repo, "init").exit_code == 0
    for name in ("claimed meanwhile", "done meanwhile", "only changed in taskwarrior"):
        cli(repo, "task", "add", name)
    _to_taskwarrior(cli, repo, tw, tmp_path)
    # Meanwhile in michi: an agent claims 1, someone finishes 2.
    cli(repo, "--agent", "bot", "task", "claim", "1")
    cli(repo, "task", "done", "2")
    uuids = [_json_of(cli, repo, "task", "show", str(i))["uuid"] for i in (1, 2, 3)]
    for uuid in uuids:
        tw(uuid, "annotate", "note from taskwarrior")
    back = _back(tw, tmp_path)

    before = remote.head()
    result = cli(repo, "import", back, "--json")
    assert result.exit_code == 4
    error = result.json()["error"]
    assert error["code"] == "import_conflict"
    assert [(c["id"], c["version"], c["imported_version"]) for c in error["conflicts"]] == [
        (1, 2, 1),
        (2, 2, 1),
    ]
    assert error["modified"] == [3] and error["transaction"]["pushed"]
    assert remote.head() != before  # the rest was imported
    one, two = (_json_of(cli, repo, "task", "show", str(i)) for i in (1, 2))
    assert (one["state"], one["assignee"], one["version"], one["annotations"]) == (
        "in_progress",
        "bot",
        2,
        [],
    )
    assert (two["state"], two["version"], two["annotations"]) == ("done", 2, [])
    assert (
        _json_of(cli, repo, "task", "show", "3")["annotations"][0]["description"] == "note from taskwarrior"
    )

    forced = _json_of(cli, repo, "import", back, "--force")
    assert forced["modified"] == [1, 2] and forced["conflicts"] == []
    assert _json_of(cli, repo, "task", "show", "2")["state"] == "todo"  # what --force asked for


def test_a_task_born_in_taskwarrior_is_a_conflict_when_michi_changed_it_later(
    cli, repo: Path, tmp_path: Path
) -> None:
    assert cli(repo, "init").exit_code == 0
    record = {
        "uuid": "aaaaaaaa-1111-4111-8111-111111111111",
        "description": "from tw",
        "status": "pending",
        "entry": "20250101T000000Z",
        "modified": "20250101T000000Z",
    }
    source = tmp_path / "tw.json"
    source.write_text(json.dumps([record]))
    assert _json_of(cli, repo, "import", str(source))["added"] == [1]
    cli(repo, "--agent", "bot", "task", "claim", "1")
    source.write_text(json.dumps([{**record, "description": "edited in tw", "modified": "20250102T000000Z"}]))
    result = cli(repo, "import", str(source), "--json")
    assert result.exit_code == 4 and [c["id"] for c in result.json()["error"]["conflicts"]] == [1]
    assert _json_of(cli, repo, "task", "show", "1")["description"] == "from tw"


def test_a_no_op_round_trip_changes_nothing(cli, repo: Path, remote, tw, tmp_path: Path) -> None:
    assert cli(repo, "init").exit_code == 0
    same_second = [{"entry": "20250101T000005Z", "description": f"n{i}"} for i in range(3)]
    records = [
        {
            "uuid": "aaaaaaaa-1111-4111-8111-111111111111",
            "description": "notes in one second",
            "status": "pending",
            "entry": "20250101T000000Z",
            "annotations": same_second,
        },
        {
            "uuid": "bbbbbbbb-2222-4222-8222-222222222222",
            "description": "comma tags",
            "status": "pending",
            "entry": "20250101T000000Z",
            "tags": ["x,y", "z"],
        },
    ]
    (tmp_path / "in.json").write_text(json.dumps(records))
    assert _json_of(cli, repo, "import", str(tmp_path / "in.json"))["added"] == [1, 2]
    assert _json_of(cli, repo, "task", "show", "2")["tags"] == ["x", "y", "z"]  # "x,y" means two tags
    # A file from before tags were split: its "x,y" survives a round trip untouched.
    legacy = "cccccccc-3333-4333-8333-333333333333"
    (repo / ".tasks" / f"{legacy}.json").write_text(
        json.dumps(
            {
                "uuid": legacy,
                "michi_id": 3,
                "description": "legacy",
                "status": "pending",
                "michi_state": "todo",
                "tags": ["x,y"],
                "entry": "20250101T000000Z",
                "michi_version": 1,
            }
        )
    )
    git(repo, "add", ".tasks")
    git(repo, "commit", "-qm", "a legacy task file")
    git(repo, "push", "-q", "origin", "main")
    _to_taskwarrior(cli, repo, tw, tmp_path)
    back = _back(tw, tmp_path)
    entries = [a["entry"] for t in json.loads(Path(back).read_text()) for a in t.get("annotations", [])]
    assert len(set(entries)) == 3  # Taskwarrior did move them apart: the case under test happened
    before = remote.head()
    report = _json_of(cli, repo, "import", back)
    assert (report["modified"], sorted(report["skipped"])) == ([], [1, 2, 3])
    assert remote.head() == before


def test_start_and_stop_in_taskwarrior_move_the_michi_state(cli, repo: Path, tw, tmp_path: Path) -> None:
    assert cli(repo, "init").exit_code == 0
    cli(repo, "task", "add", "claimed, then stopped in taskwarrior")
    cli(repo, "task", "add", "started in taskwarrior")
    cli(repo, "--agent", "bot", "task", "claim", "1")
    _to_taskwarrior(cli, repo, tw, tmp_path)
    one, two = (_json_of(cli, repo, "task", "show", str(i))["uuid"] for i in (1, 2))
    tw(one, "stop")
    tw(two, "start")
    report = _json_of(cli, repo, "import", _back(tw, tmp_path))
    assert report["modified"] == [1, 2] and report["conflicts"] == []
    stopped = _json_of(cli, repo, "task", "show", "1")
    assert (stopped["state"], stopped["start"], stopped["assignee"], stopped["claim_expires"]) == (
        "todo",
        None,
        None,
        None,
    )
    assert _json_of(cli, repo, "task", "show", "2")["state"] == "in_progress"
    assert _json_of(cli, repo, "--agent", "other", "task", "next", "--claim")["id"] == 1  # claimable again


def test_waiting_tasks_are_not_ready_until_their_wait_date(cli, repo: Path, tw, tmp_path: Path) -> None:
    assert cli(repo, "init").exit_code == 0
    tw("add", "waiting until 2030", "wait:2030-01-01", "priority:H")
    tw("add", "scheduled for 2030", "scheduled:2030-01-01", "priority:H")
    tw("add", "waited until 2020", "wait:2020-01-01", "priority:L")
    assert len(_json_of(cli, repo, "import", _back(tw, tmp_path))["added"]) == 3
    assert len(_json_of(cli, repo, "task", "list")) == 3  # still listed: open, only not ready
    ready = [t["description"] for t in _json_of(cli, repo, "task", "list", "--ready")]
    assert ready == ["waited until 2020"]
    assert (
        _json_of(cli, repo, "--agent", "bot", "task", "next", "--claim")["description"] == "waited until 2020"
    )
    nothing = cli(repo, "--agent", "bot", "task", "next", "--claim", "--json")
    assert nothing.exit_code == 3 and nothing.json()["error"]["code"] == "no_ready_task"
