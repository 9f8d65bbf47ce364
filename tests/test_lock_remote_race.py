"""The remote lock across clones over a network remote (`git daemon` on 127.0.0.1), with real processes
and real signals: scripts that pull, change, commit and push never collide; a SIGKILLed holder is
taken over after its lease and not before; a holder that cannot renew stops its command (ADR 0009)."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

import pytest
from conftest import Remote, git, run_michi, spawn_michi
from gitdaemon import git_daemon

from michi.lock.record import process_start
from michi.lock.remote_record import REF

pytestmark = pytest.mark.slow

# Each holder: bring the clone up to date, add one to the committed counter, commit with its fence, push.
INCREMENT = (
    "set -e; git pull -q --rebase origin main; n=$(cat counter); echo $((n + 1)) > counter; "
    'git commit -qam "count $((n + 1)) fence $MICHI_LOCK_FENCE"; git push -q origin HEAD:main'
)


def clone(url: str, dest: Path) -> Path:
    git(dest.parent, "clone", "-q", url, str(dest))
    return dest


def wait_for(predicate: object, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():  # type: ignore[operator]
        assert time.monotonic() < deadline, "timed out waiting"
        time.sleep(0.05)


def held_record(bare: Path) -> dict[str, object] | None:
    proc = subprocess.run(["git", "show", f"{REF}:owner.json"], cwd=bare, capture_output=True, text=True)
    if proc.returncode != 0:
        return None
    record = json.loads(proc.stdout)
    return record if record["state"] == "held" else None


def test_four_clones_increment_a_committed_counter_without_a_rejected_push(remote: Remote) -> None:
    seed = remote.clone("setup")
    (seed / "counter").write_text("0\n")
    git(seed, "add", "counter")
    git(seed, "commit", "-qm", "counter")
    git(seed, "push", "-q", "origin", "main")
    clones, per_clone = 4, 3
    with git_daemon(remote.root) as (url, _daemon):
        repos = [clone(f"{url}/origin.git", remote.root / f"clone{i}") for i in range(clones)]
        procs = [
            spawn_michi(
                r, "lock", "run", "--remote", "--ttl", "20", "--wait", "240", "--", "sh", "-c", INCREMENT
            )
            for r in repos
            for _ in range(per_clone)
        ]
        outcomes = [(p.wait(timeout=300), *p.communicate()) for p in procs]
    failed = [o for o in outcomes if o[0] != 0]
    assert not failed, failed[:2]
    assert not [o for o in outcomes if "rejected" in o[2]]
    total = clones * per_clone
    assert git(remote.bare, "show", "main:counter") == str(total)
    subjects = git(remote.bare, "log", "--reverse", "--format=%s", "main").splitlines()
    counts = [s for s in subjects if s.startswith("count ")]
    assert [int(s.split()[1]) for s in counts] == list(range(1, total + 1))
    fences = [int(s.split()[3]) for s in counts]
    assert fences == sorted(set(fences)), fences  # strictly rising in the order the pushes landed
    assert json.loads(git(remote.bare, "show", f"{REF}:owner.json"))["state"] == "free"


def test_a_sigkilled_holder_is_taken_over_after_its_lease_not_before(remote: Remote) -> None:
    ttl = 4.0
    with git_daemon(remote.root) as (url, _daemon):
        a, b, c = (clone(f"{url}/origin.git", remote.root / n) for n in ("a", "b", "c"))
        holder = spawn_michi(a, "lock", "run", "--remote", "--ttl", str(ttl), "--", "sleep", "120")
        wait_for(lambda: held_record(remote.bare) is not None)
        holder.send_signal(signal.SIGKILL)
        holder.wait(timeout=30)
        time.sleep(0.2)  # a renewal push git had in flight when michi died may still land
        last = held_record(remote.bare)
        assert last is not None
        # Not before: a clone that has not seen the record unchanged for its TTL refuses at once.
        early = run_michi(c, "--json", "lock", "run", "--remote", "--wait", "0", "--", "true")
        assert early.exit_code == 75 and early.json()["error"]["code"] == "lock_busy"
        assert early.json()["error"]["holder"]["fence"] == last["fence"]
        # After: a waiter takes it over once the record went unrenewed for the TTL on its stopwatch.
        probe = "import time; print(time.time())"
        taken = run_michi(
            b, "lock", "run", "--remote", "--wait", "60", "--", sys.executable, "-c", probe, timeout=120
        )
        assert taken.exit_code == 0, taken.stderr
    expires = datetime.fromisoformat(str(last["expires"])).timestamp()
    assert float(taken.stdout) >= expires  # one machine here: its wall clock can check the lease
    assert json.loads(git(remote.bare, "show", f"{REF}:owner.json"))["fence"] == int(str(last["fence"])) + 1
    stats = run_michi(b, "--json", "lock", "stats").json()["remote"]
    assert stats["takeovers"] == 1 and stats["takeover_reasons"] == {"expired": 1}


def test_a_holder_that_cannot_renew_stops_its_whole_command(remote: Remote) -> None:
    ttl = 3.0
    with git_daemon(remote.root) as (url, daemon):
        a = clone(f"{url}/origin.git", remote.root / "a")
        pidfile = a / ".git" / "bg.pid"
        script = f"sleep 120 & echo $! > {pidfile}; wait"
        holder = spawn_michi(
            a, "--json", "lock", "run", "--remote", "--ttl", str(ttl), "--", "sh", "-c", script
        )
        wait_for(lambda: pidfile.exists() and pidfile.read_text().strip() != "")
        grandchild = int(pidfile.read_text())
        daemon.terminate()  # the remote goes away: every renewal is refused from now on
        daemon.wait(timeout=10)
        went_down = time.monotonic()
        out, _err = holder.communicate(timeout=60)
    assert holder.returncode == 75, out
    error = json.loads(out)["error"]
    assert error["code"] == "lock_lost" and "no renewal landed" in error["message"]
    assert time.monotonic() - went_down < 60
    wait_for(lambda: process_start(grandchild) is None, timeout=10)  # the group died, not just `sh`
    with contextlib.suppress(ProcessLookupError):
        os.kill(grandchild, signal.SIGKILL)


def _running(repo: Path, *args: str) -> tuple[subprocess.Popen[str], int]:
    """Start `michi lock run --remote ... -- sh -c 'sleep 120 & wait'`; return it and the sleep's PID."""
    pidfile = repo / ".git" / f"bg-{time.monotonic_ns()}.pid"
    script = f"sleep 120 & echo $! > {pidfile}; wait"
    proc = spawn_michi(repo, "--json", "lock", "run", "--remote", *args, "--", "sh", "-c", script)
    wait_for(lambda: pidfile.exists() and pidfile.read_text().strip() != "")
    return proc, int(pidfile.read_text())


def test_sigterm_stops_the_command_and_releases(remote: Remote) -> None:
    a = remote.clone("a")
    holder, sleeper = _running(a, "--ttl", "30")
    holder.send_signal(signal.SIGTERM)
    out, _err = holder.communicate(timeout=60)
    assert holder.returncode == 130 and json.loads(out)["error"]["code"] == "terminated"
    wait_for(lambda: process_start(sleeper) is None, timeout=10)
    record = json.loads(git(remote.bare, "show", f"{REF}:owner.json"))
    assert record["state"] == "free" and record["fence"] == 1


def test_a_paused_holder_loses_the_lock_and_cannot_release_its_successors(remote: Remote) -> None:
    a, b = remote.clone("a"), remote.clone("b")
    ttl = 2.0
    holder, sleeper = _running(a, "--ttl", str(ttl))
    holder.send_signal(signal.SIGSTOP)  # michi stops renewing; its command runs on
    try:
        taken = run_michi(
            b, "lock", "run", "--remote", "--wait", "60", "--", "sh", "-c", "echo $MICHI_LOCK_FENCE"
        )
        assert taken.exit_code == 0, taken.stderr
        assert taken.stdout.strip() == "2"  # what the paused holder might still write carries fence 1
    finally:
        holder.send_signal(signal.SIGCONT)
    out, _err = holder.communicate(timeout=60)
    assert holder.returncode == 75 and json.loads(out)["error"]["code"] == "lock_lost"
    wait_for(lambda: process_start(sleeper) is None, timeout=10)
    record = json.loads(git(remote.bare, "show", f"{REF}:owner.json"))
    assert record["state"] == "free" and record["fence"] == 2  # b's release stands; a changed nothing
