"""`michi lock ...`: exit codes, the --json contract, scripts spanning commands (ADR 0003)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from conftest import git, run_michi
from lockkit import dead_pid, new_lock, write_record

from michi.lock.record import read_owner


def test_not_a_repository_is_exit_2(cli, tmp_path: Path) -> None:
    result = cli(tmp_path, "lock", "status", "--json")
    assert result.exit_code == 2
    assert result.json()["error"]["code"] == "not_a_repository"


def test_busy_lock_is_exit_75_with_holder_details(cli, local_repo: Path) -> None:
    holder = new_lock(local_repo, command="task done 42", agent="claude")
    holder.acquire(0)
    result = cli(local_repo, "--json", "lock", "acquire", "--wait", "0")
    assert result.exit_code == 75
    error = result.json()["error"]
    assert error["code"] == "lock_busy"
    assert error["holder"]["command"] == "task done 42" and error["holder"]["agent"] == "claude"
    assert "release --force" in error["hint"]
    human = cli(local_repo, "lock", "run", "--wait", "0", "--", "true")
    assert human.exit_code == 75 and human.stdout == "" and "task done 42" in human.stderr
    holder.release()


def test_acquire_release_for_scripts(cli, local_repo: Path) -> None:
    acquired = cli(local_repo, "--json", "lock", "acquire", "--ttl", "60")
    assert acquired.exit_code == 0
    token = acquired.json()["token"]
    owner = read_owner(local_repo / ".michi.lock")
    assert owner is not None and owner.token == token
    assert git(local_repo, "status", "--porcelain") == ""  # excluded: never shows in git status
    wrong = cli(local_repo, "--json", "lock", "release", "--token", "0" * 32)
    assert wrong.exit_code == 4 and wrong.json()["error"]["code"] == "lock_not_owned"
    renewed = cli(local_repo, "--json", "lock", "renew", "--token", token, "--ttl", "120")
    assert renewed.exit_code == 0
    released = cli(local_repo, "--json", "lock", "release", "--token", token)
    assert released.exit_code == 0 and released.json()["released"] is True
    again = cli(local_repo, "--json", "lock", "release", "--token", token)
    assert again.exit_code == 0 and again.json()["released"] is False  # idempotent
    assert cli(local_repo, "lock", "release").exit_code == 2  # neither token nor --force


def test_script_holder_is_the_calling_process(local_repo: Path) -> None:
    script = f"{sys.executable} -m michi lock acquire > token; echo $$ > shell.pid"
    subprocess.run(["sh", "-c", script], cwd=local_repo, check=True)
    owner = read_owner(local_repo / ".michi.lock")
    assert owner is not None and str(owner.pid) == (local_repo / "shell.pid").read_text().strip()
    status = run_michi(local_repo, "--json", "lock", "status").json()
    assert status["stale"] is True and status["reason"] == "dead"  # the script is gone
    taken = run_michi(local_repo, "--json", "lock", "acquire", "--wait", "0", "--pid", str(dead_pid()))
    assert taken.exit_code == 2  # --pid must name a live process


def test_force_release_refuses_a_live_lock_unless_told_twice(cli, local_repo: Path) -> None:
    holder = new_lock(local_repo)
    holder.acquire(0)
    refused = cli(local_repo, "--json", "lock", "release", "--force")
    assert refused.exit_code == 4 and refused.json()["error"]["code"] == "lock_live"
    assert (local_repo / ".michi.lock").is_dir()
    forced = cli(local_repo, "--json", "lock", "release", "--force", "--yes")
    assert forced.exit_code == 0 and forced.json()["why"] == "forced"
    write_record(local_repo, pid=dead_pid())
    stale = cli(local_repo, "--json", "lock", "release", "--force")
    assert stale.exit_code == 0 and stale.json()["why"] == "stale:dead"


def test_status_and_stats(cli, local_repo: Path) -> None:
    assert cli(local_repo, "--json", "lock", "status").json()["held"] is False
    holder = new_lock(local_repo, ttl=100, agent="a1")
    holder.acquire(0)
    status = cli(local_repo, "--json", "lock", "status").json()
    assert status["held"] and not status["stale"] and status["reason"] == "live"
    assert 90 < status["time_left"] <= 100 and status["holder"]["agent"] == "a1"
    assert "live" in cli(local_repo, "lock", "status").stdout
    holder.release()
    stats = cli(local_repo, "--json", "lock", "stats").json()
    assert stats["acquisitions"] == 1 and stats["hold"]["median"] is not None
    assert "acquisitions  1" in cli(local_repo, "lock", "stats").stdout


def test_run_passes_token_and_exit_status(local_repo: Path) -> None:
    script = "cat .michi.lock/owner.json > seen.json; echo $MICHI_LOCK_TOKEN > token; exit 7"
    result = run_michi(local_repo, "lock", "run", "--", "sh", "-c", script)
    assert result.exit_code == 7
    assert (local_repo / "token").read_text().strip() in (local_repo / "seen.json").read_text()
    assert not (local_repo / ".michi.lock").exists()
    missing = run_michi(local_repo, "--json", "lock", "run", "--", "no-such-command-xyz")
    assert missing.exit_code == 127 and missing.json()["error"]["code"] == "command_failed"


def test_lock_path_file_is_exit_2(cli, local_repo: Path) -> None:
    (local_repo / ".michi.lock").write_text("x")
    result = cli(local_repo, "--json", "lock", "run", "--", "true")
    assert result.exit_code == 2 and result.json()["error"]["code"] == "lock_path_invalid"


def test_linked_worktree_shares_the_main_lock(cli, local_repo: Path, tmp_path: Path) -> None:
    linked = tmp_path / "linked"
    git(local_repo, "worktree", "add", "-q", str(linked))
    holder = new_lock(local_repo)
    holder.acquire(0)
    result = cli(linked, "--json", "lock", "acquire", "--wait", "0")
    assert result.exit_code == 75
    holder.release()


def test_spinner_only_for_a_person_at_a_terminal(monkeypatch, tmp_path: Path) -> None:
    from michi.cli import progress
    from michi.session import Session

    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    monkeypatch.setenv("TERM", "xterm")
    with progress.lock_waiter(Session(cwd=tmp_path, json=True)) as on_wait:
        assert on_wait is None  # never in --json mode
    with progress.lock_waiter(Session(cwd=tmp_path)) as on_wait:
        assert on_wait is not None
        on_wait(None, 1.0)
    assert "waiting for the repo lock (1s)" in progress.describe_wait(None, 1.0)


def test_a_lease_that_never_ends_is_refused(cli, local_repo: Path, monkeypatch) -> None:
    """`--ttl 0` once gave a lock without expiry: a holder that hangs held the clone's lock for ever.
    Every way to ask for one (acquire, run, renew, the environment, the config file) is a usage error
    naming where it came from, and no lock is taken."""
    for args in (
        ("lock", "acquire", "--ttl", "0"),
        ("lock", "acquire", "--ttl", "-5"),
        ("lock", "run", "--ttl", "0", "--", "true"),
        ("lock", "renew", "--token", "x", "--ttl", "0"),
    ):
        result = cli(local_repo, "--json", *args)
        assert result.exit_code == 2, (args, result.stdout)
        error = result.json()["error"]
        assert error["code"] == "usage" and "--ttl" in error["message"] and "above 0" in error["message"]
        assert read_owner(local_repo / ".michi.lock") is None
    monkeypatch.setenv("MICHI_LOCK_TTL", "0")
    result = cli(local_repo, "--json", "lock", "acquire")
    assert result.exit_code == 2 and "MICHI_LOCK_TTL" in result.json()["error"]["message"]
    monkeypatch.delenv("MICHI_LOCK_TTL")
    (local_repo / ".michi.toml").write_text("[michi]\nlock_ttl = 0\n")
    result = cli(local_repo, "--json", "lock", "acquire")
    assert result.exit_code == 2 and ".michi.toml" in result.json()["error"]["message"]
    assert read_owner(local_repo / ".michi.lock") is None


def test_a_busy_lock_can_exit_with_a_code_the_command_never_uses(cli, local_repo: Path) -> None:
    """`lock run` passes its command's exit status through, so a command's own 75 looks like "busy,
    never ran", and a script that retries on 75 would run it twice. `--conflict-exit-code N` (flock's
    -E) gives the busy lock a code of the caller's choosing; the command's 75 stays its own."""
    ran = run_michi(local_repo, "lock", "run", "-E", "99", "--", "sh", "-c", "exit 75")
    assert ran.exit_code == 75  # the command's own
    holder = new_lock(local_repo, command="task done 42")
    holder.acquire(0)
    busy = cli(local_repo, "--json", "lock", "run", "--conflict-exit-code", "99", "--wait", "0",
               "--", "touch", "x")  # fmt: skip
    assert busy.exit_code == 99, busy.stdout
    assert busy.json()["error"]["code"] == "lock_busy"
    assert not (local_repo / "x").exists()
    human = cli(local_repo, "lock", "run", "-E", "99", "--wait", "0", "--", "touch", "x")
    assert human.exit_code == 99 and "task done 42" in human.stderr and not (local_repo / "x").exists()
    assert cli(local_repo, "lock", "run", "--wait", "0", "--", "true").exit_code == 75  # the default
    holder.release()
    refused = cli(local_repo, "--json", "lock", "run", "-E", "300", "--", "true")
    assert refused.exit_code == 2 and refused.json()["error"]["code"] == "usage"


@pytest.mark.parametrize(("sig", "status"), [("INT", 130), ("TERM", 143)])
def test_a_command_ended_by_a_signal_is_said_so(local_repo: Path, sig: str, status: int) -> None:
    """Its 128 + N is kept, but it is the command's end, not michi's Ctrl-C ("nothing half-done")."""
    ran = run_michi(local_repo, "--json", "lock", "run", "--", "sh", "-c", f"echo ran > ran; kill -{sig} $$")
    assert ran.exit_code == status, ran.stderr
    error = ran.json()["error"]
    assert (error["code"], error["signal"], error["returncode"]) == ("command_signalled", f"SIG{sig}", status)
    assert (local_repo / "ran").read_text() == "ran\n"
    assert not (local_repo / ".michi.lock").exists()
