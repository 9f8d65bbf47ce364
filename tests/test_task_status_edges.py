"""A task's Taskwarrior `status` beside its `michi_state` (ADR 0007): a `waiting` task is ready once its
`wait` has passed, as a pending one is; a status that says finished while michi_state says open holds the
task back as `mismatch` (stuck) and `michi doctor` names it with its mend, as it names the reverse; what
waits on a stuck task is stuck too; MCP's `wait` and `ttl` past ten years are the argument's usage error.
Real git throughout: a bare remote and clones (conftest)."""

from __future__ import annotations

import calendar
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import CliResult, Remote, git, run_michi
from twkit import taskwarrior

UUID_A = "11111111-2222-4333-8444-555555555555"
UUID_B = "11111111-2222-4333-8444-666666666666"
PAST, FUTURE = "20250102T000000Z", "20990101T000000Z"


@pytest.fixture
def work(cli: Callable[..., CliResult], repo: Path) -> Path:
    assert cli(repo, "init").exit_code == 0
    return repo


def _import(cli: Callable[..., CliResult], repo: Path, tmp_path: Path, *records: dict[str, Any]) -> None:
    source = tmp_path / "import.json"
    source.write_text(json.dumps(list(records)))
    result = cli(repo, "--json", "import", str(source))
    assert result.exit_code == 0, result.stdout + result.stderr


def _record(uuid: str, description: str, status: str, **more: Any) -> dict[str, Any]:
    """A record as `task export` writes it (Taskwarrior 2.5 still wrote `waiting`)."""
    entry = "20250101T000000Z"
    return {"uuid": uuid, "description": description, "status": status, "entry": entry, **more}


def _no_ready(cli: Callable[..., CliResult], repo: Path) -> dict[str, Any]:
    result = cli(repo, "--json", "--agent", "a1", "task", "next", "--claim")
    assert result.exit_code == 3, result.stdout
    error: dict[str, Any] = result.json()["error"]
    assert error["code"] == "no_ready_task", error
    return error


def _hand_edit(repo: Path, ident: int, **fields: Any) -> None:
    """Set fields of task `ident`'s file by hand, committed and pushed past the hook."""
    for path in (repo / ".tasks").glob("*/*.json"):
        record = json.loads(path.read_text())
        if record["michi_id"] == ident:
            path.write_text(json.dumps({**record, **fields}, indent=2) + "\n")
            break
    else:
        raise AssertionError(f"no task {ident}")
    git(repo, "commit", "-qam", f"hand edit of task {ident}", "--no-verify")
    git(repo, "push", "-q", "origin", "main")


def _doctor(cli: Callable[..., CliResult], repo: Path) -> dict[str, Any]:
    report: dict[str, Any] = json.loads(cli(repo, "--json", "doctor").stdout)
    return report


# 1. `waiting` is Taskwarrior's word for a wait date still to come: the date decides, never the status


def test_a_waiting_task_whose_wait_passed_or_is_absent_is_handed_out(cli, work: Path, tmp_path: Path) -> None:
    _import(
        cli,
        work,
        tmp_path,
        _record(UUID_A, "waited until 2025", "waiting", wait=PAST),
        _record(UUID_B, "waiting, no date", "waiting"),
    )
    ready = [t["description"] for t in cli(work, "--json", "task", "list", "--ready").json()]
    assert sorted(ready) == ["waited until 2025", "waiting, no date"]
    claims = [cli(work, "--json", "--agent", "a1", "task", "next", "--claim") for _ in "ab"]
    got = {claimed.json()["description"] for claimed in claims}
    assert got == {"waited until 2025", "waiting, no date"}
    finished = _no_ready(cli, work)
    assert finished["open"] == finished["mine"] == 2 and finished["waiting"] == 0, finished


def test_waiting_counts_every_task_held_by_a_date_still_to_come(cli, work: Path, tmp_path: Path) -> None:
    _import(
        cli,
        work,
        tmp_path,
        _record(UUID_A, "waiting status", "waiting", wait=FUTURE),
        _record(UUID_B, "pending, waits too", "pending", wait=FUTURE),
    )
    error = _no_ready(cli, work)
    assert (error["open"], error["waiting"], error["stuck"]) == (2, 2, 0), error
    assert "2 waiting" in error["message"] and "none claimable" not in error["message"], error


def test_the_wait_passing_frees_a_waiting_task_from_a_warm_ranking(cli, work: Path, tmp_path: Path) -> None:
    """The ranking built while it waited (ADR 0015) hands it out once the date passes."""
    # The date is the event awaited (michi reads the real clock): far enough for the import and the first
    # `next` to run before it on a loaded machine, which the assertion on the clock below makes sure of.
    soon = int(time.time()) + 6
    wait = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(soon))
    _import(cli, work, tmp_path, _record(UUID_A, "wait until soon", "waiting", wait=wait))
    assert _no_ready(cli, work)["waiting"] == 1
    assert time.time() < soon, "the machine took longer than the wait: the ranking was not built before it"
    time.sleep(max(0.0, calendar.timegm(time.strptime(wait, "%Y%m%dT%H%M%SZ")) - time.time()) + 0.1)
    claimed = cli(work, "--json", "--agent", "a1", "task", "next", "--claim")
    assert claimed.exit_code == 0 and claimed.json()["description"] == "wait until soon", claimed.stdout


def test_a_change_un_waits_a_task_whose_wait_passed(cli, work: Path, tmp_path: Path) -> None:
    """Taskwarrior un-waits such a task (and 2.6 stores no `waiting` at all): michi's change writes
    `pending`, so the file says what the task is; one still waiting stays `waiting`."""
    _import(
        cli,
        work,
        tmp_path,
        _record(UUID_A, "waited", "waiting", wait=PAST),
        _record(UUID_B, "still waiting", "waiting", wait=FUTURE),
    )
    for ident in ("1", "2"):
        assert cli(work, "task", "annotate", ident, "looked at").exit_code == 0
    shown = [cli(work, "--json", "task", "show", i).json()["status"] for i in ("1", "2")]
    assert shown == ["pending", "waiting"]


def test_a_round_trip_through_taskwarrior_after_the_un_wait_changes_nothing(
    cli, work: Path, remote: Remote, tmp_path: Path
) -> None:
    tw = taskwarrior(tmp_path)
    _import(cli, work, tmp_path, _record(UUID_A, "waited", "waiting", wait=PAST))
    assert cli(work, "task", "annotate", "1", "looked at").exit_code == 0
    exported = cli(work, "export", "--all").stdout
    (tmp_path / "michi.json").write_text(exported)
    tw("import", str(tmp_path / "michi.json"))
    (tmp_path / "back.json").write_text(tw("export"))
    before = remote.head()
    back = cli(work, "--json", "import", str(tmp_path / "back.json")).json()
    assert (back["added"], back["modified"], back["skipped"]) == ([], [], [1]), back
    assert remote.head() == before and cli(work, "export", "--all").stdout == exported


# 2. status and michi_state disagree: michi_state decides, an open one is held back and named


@pytest.mark.parametrize(("status", "verb"), [("completed", "done"), ("deleted", "delete")])
def test_a_status_of_finished_on_an_open_task_is_stuck_and_named(
    cli, work: Path, status: str, verb: str
) -> None:
    assert cli(work, "task", "add", "finished by hand?").exit_code == 0
    assert cli(work, "task", "add", "after it", "--depends", "1").exit_code == 0
    _hand_edit(work, 1, status=status)
    error = _no_ready(cli, work)
    assert (error["open"], error["mismatch"], error["blocked"], error["stuck"]) == (2, 2, 0, 2), error
    assert "michi doctor" in error["hint"], error
    listed = {t["id"]: (t["status"], t["state"]) for t in cli(work, "--json", "task", "list").json()}
    assert listed == {1: (status, "todo"), 2: ("pending", "todo")}  # open, as the counts say
    report = _doctor(cli, work)
    assert report["ok"] is False
    (problem,) = report["problems"]
    assert (problem["id"], problem["status"], problem["state"]) == (1, status, "todo"), problem
    assert f"michi task {verb} 1" in problem["problem"] and "annotate 1" in problem["problem"], problem
    assert cli(work, "task", verb, "1").exit_code == 0  # the mend doctor names
    assert _doctor(cli, work)["ok"] is True
    picked = cli(work, "--json", "--agent", "a1", "task", "next", "--claim")
    assert picked.exit_code == 0 and picked.json()["id"] == 2, picked.stdout


def test_any_michi_change_writes_the_status_that_goes_with_the_state(cli, work: Path) -> None:
    assert cli(work, "task", "add", "not finished after all").exit_code == 0
    _hand_edit(work, 1, status="completed")
    assert cli(work, "task", "annotate", "1", "still to do").exit_code == 0
    assert cli(work, "--json", "task", "show", "1").json()["status"] == "pending"
    assert _doctor(cli, work)["ok"] is True
    picked = cli(work, "--json", "--agent", "a1", "task", "next", "--claim")
    assert picked.exit_code == 0 and picked.json()["id"] == 1, picked.stdout


def test_a_status_of_open_on_a_finished_task_is_named_and_mended(cli, work: Path) -> None:
    """michi_state decides, as it always did: finished (open: 0, what waits on it goes ahead); doctor
    names the file, which Taskwarrior (and an export to it) would read as open."""
    assert cli(work, "task", "add", "done").exit_code == 0
    assert cli(work, "task", "done", "1").exit_code == 0
    _hand_edit(work, 1, status="pending")
    assert _no_ready(cli, work)["open"] == 0
    (problem,) = _doctor(cli, work)["problems"]
    assert (problem["id"], problem["status"], problem["state"]) == (1, "pending", "done"), problem
    assert "annotate 1" in problem["problem"] and "michi import" in problem["problem"], problem
    assert cli(work, "task", "annotate", "1", "status mended").exit_code == 0
    assert cli(work, "--json", "task", "show", "1").json()["status"] == "completed"
    assert _doctor(cli, work)["ok"] is True


# 3. what waits on a task only a person can free is stuck too, never `blocked` (ask again for ever)


def test_a_task_waiting_on_a_bad_date_task_is_stuck(cli, work: Path) -> None:
    assert cli(work, "task", "add", "deferred by hand").exit_code == 0
    assert cli(work, "task", "add", "after it", "--depends", "1").exit_code == 0
    assert cli(work, "task", "add", "after that", "--depends", "2").exit_code == 0
    _hand_edit(work, 1, wait="tomorrow")
    error = _no_ready(cli, work)
    assert (error["open"], error["bad_date"], error["blocked"], error["stuck"]) == (3, 3, 0, 3), error


# 4. MCP: a wait or lease past ten years (or infinite) is the argument's usage error


@pytest.mark.parametrize(
    ("tool", "arguments", "name"),
    [
        ("task_start", {"id": "1", "wait": 1e308}, "wait"),
        ("task_next", {"claim": True, "wait": "INF"}, "wait"),
        ("sync", {"wait": 316224001}, "wait"),
        ("task_claim", {"id": "1", "ttl": "INF"}, "ttl"),
        ("task_next", {"claim": True, "ttl": -1}, "ttl"),
    ],
)
def test_mcp_seconds_out_of_range_are_usage_naming_the_argument(
    work: Path, tool: str, arguments: dict[str, Any], name: str
) -> None:
    pytest.importorskip("mcp")
    from mcpkit import Wire, document

    assert run_michi(work, "task", "add", "one").exit_code == 0
    before = run_michi(work, "--json", "task", "list", "--state", "any").stdout
    wire = Wire(work)
    try:
        params = json.dumps({"name": tool, "arguments": arguments}).replace('"INF"', "1e999")  # infinity
        wire.send('{"jsonrpc":"2.0","id":2,"method":"tools/call","params":' + params + "}")
        is_error, body = document(wire.answer(2))
    finally:
        assert wire.end() == 0
    assert is_error and body["error"]["code"] == "usage", body
    assert body["error"]["message"].startswith(f"{tool}: {name}: expected a number of seconds"), body
    assert run_michi(work, "--json", "task", "list", "--state", "any").stdout == before
