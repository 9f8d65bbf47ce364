"""A remote that takes the connection and then never answers (ADR 0004, `remote_timeout`): michi ends the
fetch or push with everything it started, says so in one line (exit 5), lets the lock go and leaves the
user's work as it was; what may have landed is checked, never guessed."""

from __future__ import annotations

import json
import os
from pathlib import Path

from conftest import Remote, git, run_michi
from gitdaemon import git_daemon
from lockkit import wait_until
from txnkit import assert_exactly_once

from michi.lock.procs import start_ticks

TIMEOUT = {"MICHI_REMOTE_TIMEOUT": "1"}


def _stuck_script(root: Path, name: str) -> tuple[Path, Path]:
    """A program that notes its pid and then waits forever (a server that never answers)."""
    pidfile = root / f"{name}.pid"
    script = root / name
    script.write_text(f"#!/bin/sh\necho $$ > '{pidfile}'\nexec sleep 600\n")
    script.chmod(0o755)
    return script, pidfile


def _gone(pidfile: Path) -> bool:
    return start_ticks(int(pidfile.read_text())) is None


def _user_work(repo: Path) -> dict[str, str]:
    return {"status": git(repo, "status", "--porcelain"), "head": git(repo, "rev-parse", "HEAD")}


def test_a_push_the_remote_never_answers_is_ended_and_nothing_lands(remote: Remote, repo: Path) -> None:
    assert run_michi(repo, "task", "add", "first").exit_code == 0
    script, pidfile = _stuck_script(remote.root, "stuck-hook")
    hook = remote.bare / "hooks" / "pre-receive"
    hook.write_text(f"#!/bin/sh\nexec '{script}'\n")
    hook.chmod(0o755)
    (repo / "mine.txt").write_text("the user's own work\n")
    before, tip = _user_work(repo), remote.head()
    out = run_michi(repo, "--json", "task", "add", "second", env=TIMEOUT)
    assert out.exit_code == 5, out.stdout + out.stderr
    error = json.loads(out.stdout)["error"]
    assert error["code"] == "remote_unreachable" and "did not answer within 1 s" in error["message"]
    assert "MICHI_REMOTE_TIMEOUT" in error["hint"]
    assert pidfile.exists()
    wait_until(lambda: _gone(pidfile), what="the remote's stuck hook ended with the push")
    assert remote.head() == tip and _user_work(repo) == before
    assert not (repo / ".michi.lock").exists()
    hook.unlink()  # the remote answers again: the next command lands, and only its own task
    assert run_michi(repo, "task", "add", "third").exit_code == 0
    listed = json.loads(run_michi(repo, "--json", "task", "list").stdout)
    assert sorted(t["description"] for t in listed) == ["first", "third"]
    assert (repo / "mine.txt").read_text() == "the user's own work\n"


def test_a_fetch_the_remote_never_answers_is_ended_with_one_line(remote: Remote, repo: Path) -> None:
    assert run_michi(repo, "task", "add", "first").exit_code == 0
    script, pidfile = _stuck_script(remote.root, "stuck-upload-pack")
    git(repo, "config", "remote.origin.uploadpack", str(script))
    before, tip = _user_work(repo), remote.head()
    out = run_michi(repo, "--json", "sync", env=TIMEOUT)  # a transaction that fetches under the lock
    assert out.exit_code == 5, out.stdout + out.stderr
    assert json.loads(out.stdout)["error"]["code"] == "remote_unreachable"
    assert len(out.stderr.strip().splitlines()) <= 2  # the error and its hint
    wait_until(lambda: _gone(pidfile), what="the stuck upload-pack ended with the fetch")
    assert remote.head() == tip and _user_work(repo) == before
    assert not (repo / ".michi.lock").exists()
    read = run_michi(repo, "--json", "task", "list", "--fetch", env=TIMEOUT)
    assert read.exit_code == 5 and json.loads(read.stdout)["error"]["code"] == "remote_unreachable"


def test_no_limit_when_remote_timeout_is_zero(remote: Remote, repo: Path) -> None:
    """0 waits as git does; a remote that is merely slow then still lands (here: 2 s, with a limit of 0)."""
    hook = remote.bare / "hooks" / "pre-receive"
    hook.write_text("#!/bin/sh\nsleep 2\n")
    hook.chmod(0o755)
    out = run_michi(repo, "task", "add", "slow", env={"MICHI_REMOTE_TIMEOUT": "0"})
    assert out.exit_code == 0, out.stdout + out.stderr
    assert os.path.exists(repo / ".tasks")


def test_a_push_ended_at_the_limit_that_a_server_lands_later_lands_once(remote: Remote, repo: Path) -> None:
    """Over a network (git://, ssh, https) ending git's side of a push leaves the server's running: it
    may land the push after michi gave up on it. michi said "retry" (`remote_unreachable`) and forgot the
    operation, and the user's retry added the task twice. Now: `push_unknown`, kept in the journal, and
    the next command finishes it exactly once."""
    assert run_michi(repo, "task", "add", "first").exit_code == 0
    reached, gate = remote.root / "reached", remote.root / "gate"
    hook = remote.bare / "hooks" / "pre-receive"
    hook.write_text(f"#!/bin/sh\ntouch '{reached}'\nwhile [ ! -e '{gate}' ]; do sleep 0.01; done\n")
    hook.chmod(0o755)
    with git_daemon(remote.root) as (url, _daemon):
        git(repo, "remote", "set-url", "origin", f"{url}/origin.git")
        tip = remote.head()
        out = run_michi(repo, "--json", "task", "add", "second", env=TIMEOUT)
        assert out.exit_code == 5, out.stdout + out.stderr
        error = json.loads(out.stdout)["error"]
        assert error["code"] == "push_unknown" and "do not repeat" in error["hint"], error
        assert reached.exists() and remote.head() == tip
        gate.touch()  # the server's side goes on and lands it, michi long gone
        wait_until(lambda: remote.head() != tip, what="the server to land the push michi ended")
        assert run_michi(repo, "task", "add", "third").exit_code == 0
        listed = json.loads(run_michi(repo, "--json", "task", "list").stdout)
    assert sorted(t["description"] for t in listed) == ["first", "second", "third"]
    assert_exactly_once(remote.bare)
