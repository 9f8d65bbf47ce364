"""Nothing placed in `.michi.lock/` wedges the lock, hangs a command or the hook, or is followed out of it
(ADR 0003): records are opened without following links or blocking, read only as small regular files."""

from __future__ import annotations

import json
import os
import stat
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import git, run_michi
from lockkit import age

from michi.lock.record import MAX_RECORD_BYTES, OWNER_FILE


def _dir(path: Path) -> None:
    path.mkdir()
    (path / "inner").write_text("x")


def _fifo(path: Path) -> None:
    os.mkfifo(path)


def _dev_zero(path: Path) -> None:
    path.symlink_to("/dev/zero")


def _huge(path: Path) -> None:
    with path.open("wb") as fh:
        fh.truncate(300 * 1024 * 1024)  # sparse: 300 MB that cost nothing to make


def _long_json(path: Path) -> None:
    path.write_text(json.dumps({"pid": "1" * (MAX_RECORD_BYTES + 10)}))


def _huge_integer(path: Path) -> None:
    # Valid JSON, 5 KB: Python's int() refuses more than 4300 digits with a plain ValueError.
    path.write_text('{"pid": 1' + "0" * 5000 + ', "host": "x", "token": "t"}')


KINDS: dict[str, tuple[Callable[[Path], None], str]] = {
    "directory": (_dir, "a directory"),
    "fifo": (_fifo, "a FIFO"),
    "symlink to /dev/zero": (_dev_zero, "a symlink"),
    "300 MB file": (_huge, "bytes, far larger than a record"),
    "oversized JSON": (_long_json, "far larger than a record"),
    "integer of 5000 digits": (_huge_integer, "not valid JSON"),
}


@pytest.fixture(params=sorted(KINDS))
def hostile(request: pytest.FixtureRequest, local_repo: Path) -> tuple[Path, str]:
    make, said = KINDS[request.param]
    lock_dir = local_repo / ".michi.lock"
    lock_dir.mkdir()
    make(lock_dir / OWNER_FILE)
    age(lock_dir, 10)  # past the grace a holder gets to publish its record
    return local_repo, said


def test_status_names_the_problem_without_reading_it(hostile: tuple[Path, str]) -> None:
    repo, _ = hostile
    status = run_michi(repo, "--json", "lock", "status", timeout=30)
    assert status.exit_code == 0
    data = status.json()
    assert data["held"] and data["stale"] and data["reason"] == "corrupt"


def test_a_locking_command_takes_it_over(hostile: tuple[Path, str]) -> None:
    repo, _ = hostile
    result = run_michi(repo, "lock", "run", "--wait", "0", "--", "sh", "-c", "echo ran > ran", timeout=30)
    assert result.exit_code == 0, result.stderr
    assert (repo / "ran").read_text() == "ran\n"
    assert not (repo / ".michi.lock").exists()


def test_force_release_clears_whatever_is_there(hostile: tuple[Path, str]) -> None:
    repo, _ = hostile
    age(repo / ".michi.lock", -3600)  # fresh: not stale yet, so only --yes may clear it
    (repo / ".michi.lock").touch()
    result = run_michi(repo, "--json", "lock", "release", "--force", "--yes", timeout=30)
    assert result.exit_code == 0, result.stderr
    assert result.json()["released"] is True and result.json()["why"] == "forced"
    assert not os.path.lexists(repo / ".michi.lock")


def test_the_hook_refuses_in_one_line_without_hanging(hostile: tuple[Path, str]) -> None:
    repo, said = hostile
    assert run_michi(repo, "hook", "install").exit_code == 0
    (repo / "f").write_text("x")
    git(repo, "add", "f")
    proc = subprocess.run(["git", "commit", "-qm", "x"], cwd=repo, capture_output=True, text=True, timeout=30)
    assert proc.returncode != 0  # git reports any hook refusal as 1
    assert "unreadable" in proc.stderr and said in proc.stderr
    assert len(proc.stderr) < 1000  # never the record itself


def test_a_folder_inside_the_lock_does_not_wedge_it(local_repo: Path) -> None:
    made = run_michi(
        local_repo, "lock", "run", "--", "sh", "-c", "mkdir -p .michi.lock/cache/deep && echo ok"
    )
    assert made.exit_code == 0, made.stderr
    assert not (local_repo / ".michi.lock").exists()
    again = run_michi(local_repo, "lock", "run", "--wait", "0", "--", "true")
    assert again.exit_code == 0, again.stderr


def test_clearing_never_follows_links_out_of_the_lock(local_repo: Path, tmp_path: Path) -> None:
    outside = tmp_path / "precious"
    outside.mkdir()
    (outside / "keep.txt").write_text("mine")
    lock_dir = local_repo / ".michi.lock"
    lock_dir.mkdir()
    (lock_dir / "link").symlink_to(outside)
    (lock_dir / "sub").mkdir()
    (lock_dir / "sub" / "link").symlink_to(outside / "keep.txt")
    result = run_michi(local_repo, "lock", "release", "--force", "--yes", timeout=30)
    assert result.exit_code == 0, result.stderr
    assert not os.path.lexists(lock_dir)
    assert (outside / "keep.txt").read_text() == "mine"


def test_the_owner_record_is_private(local_repo: Path) -> None:
    script = "stat -c %a .michi.lock/owner.json > mode"
    assert run_michi(local_repo, "lock", "run", "--", "sh", "-c", script).exit_code == 0
    assert (local_repo / "mode").read_text().strip() == "600"
    run_michi(local_repo, "lock", "acquire", "--pid", str(os.getpid()))
    assert stat.S_IMODE(os.stat(local_repo / ".michi.lock" / OWNER_FILE).st_mode) == 0o600


@pytest.mark.parametrize("ticks", ["none", "another_group"])
def test_a_record_naming_an_unrelated_process_group_never_has_it_killed(local_repo: Path, ticks: str) -> None:
    """A dead holder's record names a process group that is not (or no longer) its command's: without
    the leader's start ticks, or with a live leader that started at another time (the number leads a
    later group). The next `lock run` takes the lock over; it once SIGKILLed that group first."""
    from lockkit import dead_pid, write_record

    from michi.lock.procs import start_ticks

    victim = subprocess.Popen(["sleep", "300"], start_new_session=True)  # an unrelated group's leader
    try:
        leader_ticks = start_ticks(victim.pid)
        assert leader_ticks is not None
        recorded = None if ticks == "none" else leader_ticks - 1
        write_record(local_repo, pid=dead_pid(), pgid=victim.pid, pgid_ticks=recorded)
        result = run_michi(local_repo, "--json", "lock", "run", "--wait", "5", "--", "true")
        assert result.exit_code == 0, result.stdout + result.stderr
        assert victim.poll() is None, "an unrelated process group was killed"
        assert "ended what its command left running" not in result.stderr
    finally:
        victim.kill()
        victim.wait()
