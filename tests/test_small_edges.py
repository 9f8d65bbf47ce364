"""Small edges, each a real michi process on real git: what michi says when a flag, a record or a file
holds a value at the edge of what it takes (lock run's command, -E, --ttl/--wait, the last id, a lock
record's year, a lone surrogate over MCP, a submodule named `.tasks`, an import naming another domain, a
`wait` that is no date)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from conftest import CliResult, Remote, git, run_michi

UUID = "0e4ab0a8-3c59-4d7e-9d2c-3b0d0f7a1c11"


def _error(result: CliResult) -> Any:
    return result.json()["error"]


def _init(repo: Path) -> Path:
    assert run_michi(repo, "init").exit_code == 0
    return repo


def _push_by_hand(repo: Path, message: str) -> None:
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", message, "--no-verify")
    git(repo, "push", "-q", "origin", "main")


# 1. lock run: a command that cannot start exits as a shell's would, never as a command's own 2


def test_a_command_lock_run_cannot_start_exits_127_or_126(local_repo: Path) -> None:
    """`lock run -- /nonexistent/cmd` exited 2, as a command that itself exits 2 does: the caller could
    not tell "it never ran". A shell's convention: 127 not found, 126 found but not executable."""
    missing = run_michi(local_repo, "--json", "lock", "run", "--", "/nonexistent/cmd")
    assert missing.exit_code == 127, missing.stdout
    error = _error(missing)
    assert error["code"] == "command_failed" and "/nonexistent/cmd" in error["message"], error
    (local_repo / "tool").write_text("#!/bin/sh\nexit 0\n")  # no execute permission
    refused = run_michi(local_repo, "lock", "run", "--", "./tool")
    assert refused.exit_code == 126, refused.stderr
    assert "./tool" in refused.stderr and "Traceback" not in refused.stderr
    own = run_michi(local_repo, "lock", "run", "--", "sh", "-c", "exit 2")  # the command's own 2 stays 2
    assert own.exit_code == 2
    assert not (local_repo / ".michi.lock").exists()


def test_a_command_lock_run_remote_cannot_start_exits_127(remote: Remote) -> None:
    repo = remote.clone("work")
    missing = run_michi(repo, "--json", "lock", "run", "--remote", "--", "/nonexistent/cmd")
    assert missing.exit_code == 127, missing.stdout
    assert _error(missing)["code"] == "command_failed"
    assert json.loads(run_michi(repo, "--json", "lock", "status", "--remote").stdout)["held"] is False


# 2. -E 0 would make "lock busy" read as success


def test_conflict_exit_code_0_is_refused_as_usage(local_repo: Path) -> None:
    """`-E 0` made "lock busy" exit 0: a caller took "never ran" for success. -E takes 1 to 255."""
    for value, why in (("0", "success"), ("256", "1 to 255")):
        result = run_michi(local_repo, "--json", "lock", "run", "-E", value, "--", "touch", "ran")
        assert result.exit_code == 2, (value, result.stdout)
        error = _error(result)
        assert error["code"] == "usage" and "--conflict-exit-code" in error["message"], error
        assert why in error["message"], error
        assert not (local_repo / "ran").exists()  # refused before anything ran
    assert run_michi(local_repo, "lock", "run", "-E", "1", "--", "true").exit_code == 0


# 3. a flag's bad value is `usage` naming the flag, not `bad_config`


@pytest.mark.parametrize(
    ("args", "flag"),
    [
        (("lock", "acquire", "--ttl", "0"), "--ttl"),
        (("lock", "renew", "--token", "x", "--ttl", "nan"), "--ttl"),
        (("lock", "run", "--ttl", "0", "--", "true"), "--ttl"),
        (("lock", "acquire", "--wait", "inf"), "--wait"),
        (("lock", "run", "--wait", "1e12", "--", "true"), "--wait"),
    ],
)
def test_a_bad_lock_flag_is_a_usage_error_naming_it(
    local_repo: Path, args: tuple[str, ...], flag: str
) -> None:
    result = run_michi(local_repo, "--json", *args)
    assert result.exit_code == 2, result.stdout
    error = _error(result)
    assert error["code"] == "usage" and flag in error["message"], error
    assert not (local_repo / ".michi.lock").exists()


# 4. the last id is no corrupt task


@pytest.mark.parametrize("where", ["task file", "counter"])
def test_no_ids_left_is_named_as_such(remote: Remote, where: str) -> None:
    work = _init(remote.clone("work"))
    if where == "task file":
        record = {"uuid": UUID, "michi_id": 999_999_999, "description": "last", "status": "pending",
                  "entry": "20250101T000000Z"}  # fmt: skip
        (work / ".tasks" / UUID[:2]).mkdir()
        (work / ".tasks" / UUID[:2] / f"{UUID}.json").write_text(json.dumps(record))
    else:
        (work / ".michi" / "last-id").write_text("999999999\n")
    _push_by_hand(work, f"a {where} at the last id")
    before = remote.head()
    added = run_michi(work, "--json", "task", "add", "one more")
    assert added.exit_code == 4, added.stdout
    error = _error(added)
    assert error["code"] == "ids_exhausted", error
    assert "999,999,999" in error["message"] and "michi doctor" in error["hint"], error
    assert remote.head() == before


# 5. a lock record's year is written with four digits, whatever it is


def test_lock_status_writes_any_year_of_the_record(local_repo: Path) -> None:
    token = run_michi(local_repo, "lock", "acquire", "--pid", str(os.getpid())).stdout.strip()
    assert token
    owner = local_repo / ".michi.lock" / "owner.json"
    record = json.loads(owner.read_text())
    record["created"] = "0001-01-01T00:00:00.000000Z"
    record["expires"] = "9999-12-31T23:59:59.999999Z"  # a float of it is in year 10000
    owner.write_text(json.dumps(record))
    try:
        status = run_michi(local_repo, "--json", "lock", "status")
        assert status.exit_code == 0, status.stdout + status.stderr
        holder = json.loads(status.stdout)["holder"]
        assert holder["created"] == "00010101T000000Z", holder
        assert holder["expires"] == "invalid time", holder
        shown = run_michi(local_repo, "lock", "status")
        assert shown.exit_code == 0 and "Traceback" not in shown.stderr
        assert "10101T" not in shown.stdout.replace("00010101T", "")
    finally:
        assert run_michi(local_repo, "lock", "release", "--token", token).exit_code == 0


# 6. a lone surrogate in a tool's argument is that argument's usage error; the server goes on


def test_mcp_lone_surrogate_argument_is_a_tool_usage_error(remote: Remote) -> None:
    pytest.importorskip("mcp")
    from mcpkit import Wire, document

    work = _init(remote.clone("work"))
    wire = Wire(work)
    try:
        params = '{"name":"task_add","arguments":{"description":"a\\ud800b","tags":["ok"]}}'
        wire.send('{"jsonrpc":"2.0","id":2,"method":"tools/call","params":' + params + "}")
        reply = wire.answer(2)
        assert "error" not in reply, reply  # not a JSON-RPC parse error
        is_error, body = document(reply)
        assert is_error and body["error"]["code"] == "usage", body
        assert "description" in body["error"]["message"] and "\\ud800" in body["error"]["message"], body
        wire.call(3, "task_list")
        is_error, tasks = document(wire.answer(3))
        assert not is_error and tasks == []  # nothing was added, and the server answers on
    finally:
        assert wire.end() == 0


# 7. a submodule named `.tasks` is no folder of michi's: exit 2, as a file or symlink there


@pytest.mark.parametrize("commit", ["absent", "present"])
def test_a_submodule_named_tasks_is_bad_domain(remote: Remote, commit: str) -> None:
    work = remote.clone("work")
    oid = "1" * 40 if commit == "absent" else git(work, "rev-parse", "HEAD")
    git(work, "update-index", "--add", "--cacheinfo", f"160000,{oid},.tasks")
    git(work, "commit", "-qm", "a submodule named .tasks")
    git(work, "push", "-q", "origin", "main")
    before = remote.head()
    added = run_michi(work, "--json", "task", "add", "x")
    assert added.exit_code == 2, added.stdout
    error = _error(added)
    assert error["code"] == "bad_domain" and "submodule" in error["message"], error
    assert remote.head() == before


# 8. an import naming another domain than its task's is said, never ignored


def test_import_of_a_task_under_another_domain_is_a_problem(remote: Remote, tmp_path: Path) -> None:
    work = _init(remote.clone("work"))
    for name in ("a", "b"):
        (work / name / ".tasks").mkdir(parents=True)
        (work / name / ".tasks" / ".keep").write_text("")
    _push_by_hand(work, "two domains")
    assert run_michi(work, "task", "add", "lives in a", "--domain", "a").exit_code == 0
    exported = json.loads(run_michi(work, "--json", "export", "--all").stdout)
    moved = {**exported[0], "michi_domain": "b", "description": "changed"}
    new = {"uuid": UUID, "description": "new", "status": "pending", "entry": "20250101T000000Z"}
    source = tmp_path / "export.json"
    source.write_text(json.dumps([moved, new]))
    result = run_michi(work, "--json", "import", str(source))
    assert result.exit_code == 4, result.stdout
    error = _error(result)
    assert error["code"] == "import_problems", error
    problem = error["problems"][0]
    assert (problem["uuid"], problem["domain"], problem["imported_domain"]) == (moved["uuid"], "a", "b")
    assert len(error["added"]) == 1  # the rest landed
    tasks = {t["uuid"]: t for t in json.loads(run_michi(work, "--json", "task", "list", "--all").stdout)}
    assert tasks[moved["uuid"]]["description"] == "lives in a" and tasks[moved["uuid"]]["domain"] == "a"


# 9. a wait that is no date holds its task back, and doctor names it


def test_a_wait_that_is_no_date_is_not_handed_out_and_doctor_names_it(remote: Remote) -> None:
    work = _init(remote.clone("work"))
    assert run_michi(work, "task", "add", "deferred by hand", "-p", "H").exit_code == 0
    (path,) = (work / ".tasks").glob("*/*.json")
    record = json.loads(path.read_text())
    path.write_text(json.dumps({**record, "wait": "tomorrow"}))
    _push_by_hand(work, "a wait that is no date")
    none = run_michi(work, "--json", "task", "next")
    assert none.exit_code == 3, none.stdout
    error = _error(none)
    assert error["bad_date"] == 1 and error["stuck"] == error["open"] == 1, error
    report = json.loads(run_michi(work, "--json", "doctor").stdout)
    assert report["ok"] is False
    (problem,) = report["problems"]
    assert problem["id"] == 1 and problem["field"] == "wait" and "michi import" in problem["problem"]
    assert run_michi(work, "task", "add", "ready").exit_code == 0
    picked = run_michi(work, "--json", "task", "next", "--claim", "--agent", "a1")
    assert picked.exit_code == 0 and json.loads(picked.stdout)["description"] == "ready", picked.stdout
