"""Something other than a regular file where michi keeps a cache or a log under `.git/michi/` (a FIFO, a
folder): a FIFO once hung every command (a plain open() waits for a writer, and SIGTERM could not end
it), a folder made every locking command exit 1 "unexpected error". Caches and logs are best effort: the
command goes on without them; the lock's own files are `lock_path_invalid` naming the file and the fix."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import run_michi
from lockkit import new_lock

from michi.commands.task_common import LIST_CACHE
from michi.git import deltas, settings
from michi.lock import events, remote_seen
from michi.lock.queue import SUFFIX
from michi.lock.repolock import QUEUE_DIR
from michi.tasks import idmap, index, rank_cache

# Every cache and log michi keeps there, by the names its modules give them (a renamed cache stays tested).
CACHES = [
    deltas.NAME,
    settings.CACHE_NAME,
    remote_seen.SEEN_FILE,
    events.LOG_NAME,
    index.CACHE_NAME,
    index.IDS_NAME,
    index.TOP_NAME,
    idmap.NAME,
    LIST_CACHE,
    rank_cache.RANK_NAME,
    rank_cache.NODES_NAME,
]


@pytest.fixture
def ready(cli, repo: Path) -> Path:
    assert cli(repo, "init").exit_code == 0
    assert cli(repo, "task", "add", "first").exit_code == 0
    assert cli(repo, "task", "list").exit_code == 0
    return repo


def _put(path: Path, kind: str) -> None:
    if path.is_dir():
        path.rmdir()
    else:
        path.unlink(missing_ok=True)
    if kind == "fifo":
        os.mkfifo(path)
    else:
        path.mkdir()


@pytest.mark.parametrize("kind", ["fifo", "folder"])
@pytest.mark.parametrize("name", CACHES)
def test_a_cache_or_log_that_is_no_file_is_done_without(ready: Path, name: str, kind: str) -> None:
    _put(ready / ".git" / "michi" / name, kind)
    for args in (("task", "add", "second"), ("task", "next"), ("task", "list"), ("task", "start", "1")):
        result = run_michi(ready, "--json", *args, timeout=60)  # a hang fails here, not for ever
        assert result.exit_code == 0, (args, result.stdout + result.stderr)


@pytest.mark.parametrize("kind", ["fifo", "folder"])
@pytest.mark.parametrize("name", ["lock.guard", "lock.baton"])
def test_a_lock_file_that_is_no_file_is_named_with_the_fix(ready: Path, name: str, kind: str) -> None:
    path = ready / ".git" / "michi" / name
    _put(path, kind)
    result = run_michi(ready, "--json", "task", "add", "second", timeout=60)
    assert result.exit_code == 2, result.stdout + result.stderr
    error = result.json()["error"]
    assert error["code"] == "lock_path_invalid" and name in error["message"] and "rm -r" in error["hint"]
    if name == "lock.guard":  # `lock status` reads the last fence from it: it once waited for a writer
        status = run_michi(ready, "--json", "lock", "status", timeout=60)
        assert status.exit_code == 2 and status.json()["error"]["code"] == "lock_path_invalid", status.stdout
    _put(path, "fifo")
    path.unlink()  # as the hint says: michi makes it again
    assert run_michi(ready, "--json", "task", "add", "second", timeout=60).exit_code == 0


def test_what_is_no_waiter_ticket_in_the_queue_is_passed_over(ready: Path) -> None:
    """The waiters' queue (`.git/michi/lock-queue/`) holding a FIFO, a symlink and a folder under a ticket's
    name, and files named as no ticket is: a waiter once hung opening the FIFO, and `lock status` failed
    on a name without a PID. Waiters and `lock status` pass them over; the odd files are swept."""
    queue = ready / ".git" / "michi" / QUEUE_DIR
    queue.mkdir(exist_ok=True)
    fifo, link, folder = (queue / f"{n:020d}.{n}.abcdef{SUFFIX}" for n in (1, 2, 3))
    os.mkfifo(fifo)
    link.symlink_to("/dev/zero")
    folder.mkdir()
    for odd in ("notes.txt", f"x{SUFFIX}", f"a.b{SUFFIX}"):
        (queue / odd).write_text("not a ticket\n")
    holder = new_lock(ready)
    holder.acquire(0)
    try:
        status = run_michi(ready, "--json", "lock", "status", timeout=60)
        assert status.exit_code == 0 and status.json()["waiters"] == [], status.stdout + status.stderr
        waited = run_michi(ready, "--json", "task", "add", "second", "--wait", "1", timeout=60)
        assert waited.exit_code == 75 and waited.json()["error"]["code"] == "lock_busy", waited.stdout
    finally:
        holder.release()
    assert run_michi(ready, "--json", "task", "add", "second", timeout=60).exit_code == 0
    assert not fifo.exists() and not link.is_symlink() and (queue / "notes.txt").exists()


def test_a_full_disk_is_storage_failed_not_a_bug(cli, ready: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The journal cannot be written (the disk is full): exit 5 `storage_failed` naming the file and
    the fix, as when git's own write fails there, never exit 1 "please report this as a bug"; nothing
    of the change is made, and the next command works once there is room."""
    import errno

    from michi.workflow import journal

    def full(path: Path, data: bytes, **_: object) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))

    monkeypatch.setattr(journal, "write_atomic", full)
    failed = cli(ready, "--json", "task", "add", "second")
    assert failed.exit_code == 5, failed.stdout
    error = failed.json()["error"]
    assert error["code"] == "storage_failed" and "journal" in error["message"], error
    monkeypatch.undo()
    assert [t["description"] for t in cli(ready, "--json", "task", "list").json()] == ["first"]
    assert cli(ready, "--json", "task", "add", "second").exit_code == 0


@pytest.mark.parametrize("kind", ["outside", "dangling", "loop"])
def test_a_state_folder_that_is_a_link_is_refused_never_followed(
    ready: Path, tmp_path: Path, kind: str
) -> None:
    """`.git/michi` as a link: to a folder outside the repository, michi wrote its journal, lock files and
    caches there; dangling or looping, every command exited 1. Refused (exit 2) with the fix, never
    followed."""
    state = ready / ".git" / "michi"
    (ready / ".git" / "michi.moved").mkdir()
    os.rename(state, ready / ".git" / "michi.moved" / "old")
    outside = tmp_path / "outside"
    outside.mkdir()
    state.symlink_to({"outside": str(outside), "dangling": str(tmp_path / "gone"), "loop": "michi"}[kind])
    for args in (("task", "add", "second"), ("task", "list"), ("status",), ("lock", "status")):
        result = run_michi(ready, "--json", *args, timeout=60)
        assert result.exit_code == 2, (args, result.stdout + result.stderr)
        assert result.json()["error"]["code"] == "state_path_invalid", result.stdout
    assert list(outside.iterdir()) == [] and state.is_symlink()


@pytest.mark.parametrize("kind", ["file", "fifo"])
def test_a_state_folder_that_is_no_folder_is_named_with_the_fix(ready: Path, kind: str) -> None:
    """`.git/michi` itself something other than a folder: every command, reads too, exited 1 "please
    report this as a bug" (NotADirectoryError). It is named with the fix (exit 2), left as it was, and
    once moved away michi makes the folder again."""
    state = ready / ".git" / "michi"
    moved = ready / ".git" / "michi.moved"
    state.rename(moved)
    if kind == "fifo":
        os.mkfifo(state)
    else:
        state.write_text("not michi's\n")
    for args in (("task", "add", "second"), ("task", "list"), ("status",), ("lock", "status")):
        result = run_michi(ready, "--json", *args, timeout=60)
        assert result.exit_code == 2, (args, result.stdout + result.stderr)
        error = result.json()["error"]
        assert error["code"] == "state_path_invalid" and str(state) in error["message"], error
    assert not state.is_dir()
    state.unlink()
    assert run_michi(ready, "--json", "task", "add", "second", timeout=60).exit_code == 0
    assert state.is_dir()


def _limited(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """michi with at most 1 GiB of address space, as `ulimit -v` gives it."""

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))

    return subprocess.run(
        [sys.executable, "-m", "michi", "--json", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=limit,
    )


@pytest.mark.parametrize("name", ["journal.json", LIST_CACHE, "task-index.v3", settings.CACHE_NAME])
def test_a_state_file_of_hundreds_of_megabytes_is_never_read(ready: Path, name: str) -> None:
    """A state file of 512 MiB (sparse: no disk spent) was read whole: 1 GB of memory, and under a 1 GiB
    limit exit 1 (MemoryError). No file of michi's is that large: it is treated as unreadable."""
    with open(ready / ".git" / "michi" / name, "wb") as out:
        out.truncate(512 << 20)
    for args in (("task", "list"), ("task", "add", "second"), ("task", "list")):
        result = _limited(ready, *args)
        assert result.returncode == 0, (args, result.stdout + result.stderr)
    assert sorted(t["description"] for t in json.loads(result.stdout)) == ["first", "second"]
