"""Who holds a script's lock (ADR 0003): the script, however it called `michi lock acquire`; a lock taken
from it is reported when it releases (exit 4, lock_lost); PID reuse is judged by start ticks and boot id,
never by a wall-clock value."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import run_michi
from lockkit import await_exit, bash, michi_on_path, new_lock, write_record

from michi.lock import procs
from michi.lock.record import read_owner

FORMS = {
    "json through a parser": "$(michi --json lock acquire | python3 -c "
    "'import json,sys; print(json.load(sys.stdin)[\"token\"])')",
    "through tr": "$(michi lock acquire | tr -d '\\n')",
    "with a fallback": "$(michi lock acquire || echo failed)",
    "under timeout": "$(timeout 120 michi lock acquire)",
    "in a subshell": "$( (michi lock acquire) )",
}


@pytest.mark.parametrize("form", sorted(FORMS))
def test_the_script_holds_the_lock_however_it_took_it(local_repo: Path, tmp_path: Path, form: str) -> None:
    script = f"""
token={FORMS[form]}
echo $$ > script.pid
michi --json lock status > status.json
michi lock run --wait 0 -- true; echo $? > other.rc
michi lock release --token "$token"; echo $? > release.rc
"""
    result = bash(local_repo, script, michi_on_path(tmp_path))
    assert result.returncode == 0, result.stderr
    status = json.loads((local_repo / "status.json").read_text())
    assert status["holder"]["pid"] == int((local_repo / "script.pid").read_text())
    assert status["stale"] is False and status["reason"] == "live"
    assert (local_repo / "other.rc").read_text().strip() == "75"  # nobody else got it meanwhile
    assert (local_repo / "release.rc").read_text().strip() == "0"
    assert not (local_repo / ".michi.lock").exists()


def test_export_form_for_eval(local_repo: Path, tmp_path: Path) -> None:
    script = (
        'eval "$(michi lock acquire --export)"; echo "$MICHI_LOCK_TOKEN $MICHI_LOCK_FENCE" > seen; '
        "michi lock release"
    )
    result = bash(local_repo, script, michi_on_path(tmp_path))
    assert result.returncode == 0, result.stderr
    token, fence = (local_repo / "seen").read_text().split()
    assert len(token) == 32 and int(fence) >= 1
    assert not (local_repo / ".michi.lock").exists()


def test_releasing_a_lock_that_was_taken_over_is_lock_lost(local_repo: Path, tmp_path: Path) -> None:
    env = michi_on_path(tmp_path)
    token = bash(local_repo, "michi lock acquire --ttl 1", env).stdout.strip()
    # The script is gone (its shell exited), so its lock is stale; another holder takes it over.
    other = run_michi(local_repo, "lock", "run", "--wait", "10", "--", "true")
    assert other.exit_code == 0
    released = run_michi(local_repo, "--json", "lock", "release", "--token", token)
    assert released.exit_code == 4, released.stderr
    error = released.json()["error"]
    assert error["code"] == "lock_lost" and "took it over" in error["message"]
    assert error["reason"] in ("dead", "expired")
    renewed = run_michi(local_repo, "--json", "lock", "renew", "--token", token)
    assert renewed.exit_code == 4 and renewed.json()["error"]["code"] == "lock_lost"


def test_releasing_a_lock_cleared_by_force_is_lock_lost(local_repo: Path) -> None:
    token = run_michi(local_repo, "lock", "acquire", "--pid", str(os.getpid())).stdout.strip()
    assert run_michi(local_repo, "lock", "release", "--force", "--yes").exit_code == 0
    released = run_michi(local_repo, "--json", "lock", "release", "--token", token)
    assert released.exit_code == 4
    assert "--force" in released.json()["error"]["message"]


def test_releasing_twice_is_still_fine(local_repo: Path) -> None:
    token = run_michi(local_repo, "lock", "acquire", "--pid", str(os.getpid())).stdout.strip()
    assert run_michi(local_repo, "lock", "release", "--token", token).exit_code == 0
    again = run_michi(local_repo, "--json", "lock", "release", "--token", token)
    assert again.exit_code == 0 and again.json()["released"] is False


def test_pid_reuse_is_judged_by_start_ticks(local_repo: Path) -> None:
    me = procs.stat(os.getpid())
    assert me is not None
    with open(f"/proc/{os.getpid()}/stat") as fh:
        assert me.ticks == int(fh.read().rsplit(")", 1)[1].split()[19])
    write_record(local_repo, pid=os.getpid(), pid_ticks=me.ticks + 1)  # same PID, another start
    assert run_michi(local_repo, "--json", "lock", "status").json()["reason"] == "pid_reused"
    write_record(local_repo, pid=os.getpid())
    assert run_michi(local_repo, "--json", "lock", "status").json()["reason"] == "live"


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("unshare"), reason="needs root and unshare(1)")
def test_a_wall_clock_step_never_takes_over_a_live_holder(local_repo: Path, tmp_path: Path) -> None:
    """What NTP, `date -s` or a VM resume do to /proc/stat's btime, shown to the waiter only."""
    holder = subprocess.Popen(["python3", "-c", "import time; time.sleep(120)"])
    try:
        write_record(local_repo, pid=holder.pid)
        stepped = tmp_path / "stat"
        lines = Path("/proc/stat").read_text().splitlines()
        stepped.write_text(
            "\n".join(f"btime {int(x.split()[1]) + 1}" if x.startswith("btime") else x for x in lines) + "\n"
        )
        env = michi_on_path(tmp_path)
        script = f"mount --bind {stepped} /proc/stat && grep btime /proc/stat && michi --json lock status"
        proc = subprocess.run(
            ["unshare", "-m", "--propagation", "private", "bash", "-c", script],
            cwd=local_repo,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        if proc.returncode != 0 and "mount" in proc.stderr:
            pytest.skip(f"cannot bind-mount here: {proc.stderr.strip()}")
        assert proc.returncode == 0, proc.stderr
        stepped_btime, status = proc.stdout.split("\n", 1)
        assert stepped_btime.split()[1] != Path("/proc/stat").read_text().split("btime ")[1].split()[0]
        assert json.loads(status)["reason"] == "live"
        owner = read_owner(local_repo / ".michi.lock")
        assert owner is not None and owner.pid == holder.pid
    finally:
        holder.kill()
        holder.wait()


BACKGROUND = """
mkfifo acquired go
( token=$(michi lock acquire --wait 0) || exit 1
  echo "$BASHPID" > acquired
  read -r _ < go
  michi lock release --token "$token"; echo $? > release.rc ) >/dev/null 2>&1 &
read -r pid < acquired; echo "$pid" > subshell.pid
"""


@pytest.mark.parametrize("then", ["releases", "is killed"])
def test_a_background_subshell_keeps_its_lock_after_the_script_exits(
    local_repo: Path, tmp_path: Path, then: str
) -> None:
    """`( token=$(michi lock acquire); ...; michi lock release ) &`: the lock is recorded as the script's
    (a fork cannot be told from `$(...)`), with the subshells on the way, and is its while one runs."""
    result = bash(local_repo, BACKGROUND, michi_on_path(tmp_path))
    assert result.returncode == 0, result.stderr  # the script has exited; its subshell waits on `go`
    subshell = int((local_repo / "subshell.pid").read_text())
    try:
        status = run_michi(local_repo, "--json", "lock", "status").json()
        assert (status["stale"], status["reason"]) == (False, "live")
        assert run_michi(local_repo, "lock", "run", "--wait", "0", "--", "true").exit_code == 75
        if then == "is killed":
            os.kill(subshell, signal.SIGKILL)
            await_exit(subshell)
            assert run_michi(local_repo, "--json", "lock", "status").json()["reason"] == "dead"
            assert run_michi(local_repo, "lock", "run", "--wait", "0", "--", "true").exit_code == 0
            return
        fd = os.open(local_repo / "go", os.O_WRONLY)
        os.write(fd, b"go\n")
        os.close(fd)
        await_exit(subshell)
        assert (local_repo / "release.rc").read_text().strip() == "0"
        assert not (local_repo / ".michi.lock").exists()
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(subshell, signal.SIGKILL)


STEPPED = (
    "import runpy, sys, time; wall = time.time; time.time = lambda: wall() + 400; "
    "sys.argv[0] = 'michi'; runpy.run_module('michi', run_name='__main__')"
)


def test_a_wall_clock_step_never_ends_a_live_holders_lease(local_repo: Path) -> None:
    """NTP or `date -s` stepping the clock past the lease (300 s) of a holder that was never paused,
    shown to the waiter only: the lease is judged by the boot clock the holder stamped, not the wall's."""
    holder = new_lock(local_repo, ttl=300.0)
    holder.acquire(0)
    try:

        def stepped(*args: str) -> subprocess.CompletedProcess[str]:
            return subprocess.run(
                [sys.executable, "-c", STEPPED, *args], cwd=local_repo, capture_output=True, text=True
            )

        status = json.loads(stepped("--json", "lock", "status").stdout)
        assert (status["stale"], status["reason"]) == (False, "live") and status["time_left"] > 200
        waiter = stepped("lock", "run", "--wait", "0", "--", "true")
        assert waiter.returncode == 75, waiter.stderr
        holder.ensure_held()
    finally:
        holder.release()
