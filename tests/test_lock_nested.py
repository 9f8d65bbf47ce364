"""A michi started under the lock (its holder's live token in MICHI_LOCK_TOKEN) works inside that lock
instead of waiting for it, and never releases it (ADR 0003); the token never reaches git."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import git, run_michi
from lockkit import bash, michi_on_path, new_lock

from michi.lock import events


def holds(repo: Path) -> list[dict[str, object]]:
    return [e for e in events.read(repo / ".git" / "michi") if e["kind"] == "hold"]


def test_lock_run_of_a_michi_command_works_inside_the_lock(cli, repo: Path, tmp_path: Path) -> None:
    assert cli(repo, "init").exit_code == 0
    env = michi_on_path(tmp_path)
    script = (
        'michi lock run -- sh -c \'michi --json task add "under the lock" > added.json && '
        "michi --json lock status > st.json'"
    )
    result = bash(repo, script, env)
    assert result.returncode == 0, result.stderr
    assert json.loads((repo / "added.json").read_text())["transaction"]["pushed"] is True
    status = json.loads((repo / "st.json").read_text())
    assert status["held"] and status["holder"]["command"].startswith("lock run")  # still the outer's
    assert [e["command"] for e in holds(repo)][-1].startswith("lock run")  # one hold: the task add joined
    assert not (repo / ".michi.lock").exists()


def test_parallel_michis_under_one_holder_take_turns(cli, repo: Path, tmp_path: Path) -> None:
    assert cli(repo, "init").exit_code == 0
    script = "michi lock run -- sh -c 'michi task add one & michi task add two & michi task add three & wait'"
    result = bash(repo, script, michi_on_path(tmp_path))
    assert result.returncode == 0, result.stderr
    listed = cli(repo, "--json", "task", "list", "--fetch").json()
    assert sorted(t["description"] for t in listed) == ["one", "three", "two"]
    assert sorted(t["id"] for t in listed) == [1, 2, 3]


def test_only_the_live_holders_token_lets_a_michi_in(cli, local_repo: Path) -> None:
    holder = new_lock(local_repo)
    holder.acquire(0)
    wrong = run_michi(
        local_repo, "lock", "run", "--wait", "0", "--", "true", env={"MICHI_LOCK_TOKEN": "0" * 32}
    )
    assert wrong.exit_code == 75
    right = run_michi(
        local_repo, "lock", "run", "--wait", "0", "--", "true", env={"MICHI_LOCK_TOKEN": holder.token or ""}
    )
    assert right.exit_code == 0
    holder.ensure_held()  # the nested run did not release it
    old = holder.token or ""
    holder.release()
    # A leftover token from a finished hold: the command takes the lock like anyone else.
    stale = run_michi(local_repo, "lock", "run", "--wait", "0", "--", "true", env={"MICHI_LOCK_TOKEN": old})
    assert stale.exit_code == 0
    assert holds(local_repo)[-1]["command"] == "lock run true"


def test_a_script_waiting_on_its_own_lock_is_told_how_to_work_under_it(
    local_repo: Path, tmp_path: Path
) -> None:
    script = (
        "token=$(michi lock acquire); michi --json lock run --wait 0 -- true > out.json; "
        'michi lock release --token "$token"'
    )
    result = bash(local_repo, script, michi_on_path(tmp_path))
    assert result.returncode == 0, result.stderr
    error = json.loads((local_repo / "out.json").read_text())["error"]
    assert error["code"] == "lock_busy" and "--export" in error["hint"]


def test_the_token_never_reaches_git_or_the_remotes_hooks(cli, repo: Path, remote, tmp_path: Path) -> None:
    seen = tmp_path / "hook-env"
    hook = remote.bare / "hooks" / "pre-receive"
    hook.write_text(f"#!/bin/sh\nenv > {seen}\ncat >/dev/null\n")
    hook.chmod(0o755)
    assert cli(repo, "init").exit_code == 0
    result = bash(repo, "michi lock run -- michi task add 'pushed under the lock'", michi_on_path(tmp_path))
    assert result.returncode == 0, result.stderr
    env = seen.read_text()
    assert "GIT_DIR" in env or "PATH" in env  # the hook ran
    assert "MICHI_LOCK_TOKEN" not in env
    assert "task add" in git(remote.bare, "log", "-1", "--format=%s", "main")


INNER = """#!/bin/sh
eval "$(michi lock acquire --export)"
michi lock renew --ttl 1
michi lock release; echo $? > inner.rc
env -u MICHI_LOCK_TOKEN michi lock run --wait 0 -- true; echo $? > other.rc
michi --json lock status > st.json
"""


def test_a_script_run_under_lock_run_ends_only_its_own_hold(local_repo: Path, tmp_path: Path) -> None:
    """The README's acquire ... release, run as `lock run`'s command: its acquire works under the lock
    run's hold, and its renew and release neither cut nor end that hold while the command runs."""
    (local_repo / "regen.sh").write_text(INNER)
    (local_repo / "regen.sh").chmod(0o755)
    result = bash(local_repo, "michi lock run -- ./regen.sh", michi_on_path(tmp_path))
    assert result.returncode == 0, result.stderr
    assert (local_repo / "inner.rc").read_text().strip() == "0"
    assert (local_repo / "other.rc").read_text().strip() == "75"  # nobody else got in meanwhile
    status = json.loads((local_repo / "st.json").read_text())
    assert status["held"] and status["holder"]["command"].startswith("lock run")
    assert status["time_left"] > 60  # `renew --ttl 1` did not cut the lock run's lease
    assert not (local_repo / ".michi.lock").exists()  # the lock run released it at the end


def test_a_script_run_by_a_script_holding_the_lock_leaves_it_held(local_repo: Path, tmp_path: Path) -> None:
    (local_repo / "inner.sh").write_text(INNER)
    (local_repo / "inner.sh").chmod(0o755)
    script = (
        'eval "$(michi lock acquire --export)"; ./inner.sh; '
        "env -u MICHI_LOCK_TOKEN michi lock run --wait 0 -- true; echo $? > after.rc; michi lock release"
    )
    result = bash(local_repo, script, michi_on_path(tmp_path))
    assert result.returncode == 0, result.stderr
    assert (local_repo / "inner.rc").read_text().strip() == "0"
    assert (local_repo / "other.rc").read_text().strip() == "75"
    assert (local_repo / "after.rc").read_text().strip() == "75"  # still the outer script's
    assert json.loads((local_repo / "st.json").read_text())["holder"]["command"].startswith("lock acquire")
    assert not (local_repo / ".michi.lock").exists()  # the outer script's own release ended it
