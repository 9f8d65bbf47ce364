"""When a lock is stale, and when it is not (ADR 0003): each case judged by a real acquisition."""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from conftest import CliResult
from lockkit import CTX, age, dead_pid, held_worker, new_lock, write_record

from michi.errors import StorageFailed
from michi.lock import LockContention, LockLost, LockPathInvalid
from michi.lock.record import MISSING_RECORD_GRACE, OWNER_FILE, read_owner


@pytest.fixture
def sleeper() -> Iterator[int]:
    """A live process on this host that is not us."""
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    yield proc.pid
    proc.kill()
    proc.wait()


def took_over(repo: Path) -> str | None:
    lock = new_lock(repo)
    try:
        lock.acquire(0)
    except LockContention:
        return None
    reason = lock._acquired["takeover"]
    lock.release()
    return str(reason)


def test_dead_pid_is_stale(local_repo: Path) -> None:
    write_record(local_repo, pid=dead_pid())
    assert took_over(local_repo) == "dead"


def test_reused_pid_is_stale(local_repo: Path, sleeper: int) -> None:
    write_record(local_repo, pid=sleeper, pid_ticks=1)  # same PID, another process (started at boot)
    assert took_over(local_repo) == "pid_reused"


def test_live_pid_is_not_stale(local_repo: Path, sleeper: int) -> None:
    lock_dir = write_record(local_repo, pid=sleeper)
    assert took_over(local_repo) is None
    assert read_owner(lock_dir) is not None


def test_other_host_is_never_judged_by_pid(local_repo: Path) -> None:
    write_record(local_repo, pid=dead_pid(), host="elsewhere.invalid")
    assert took_over(local_repo) is None


def test_expired_lease_is_stale_even_on_other_host(local_repo: Path, sleeper: int) -> None:
    write_record(local_repo, pid=sleeper, host="elsewhere.invalid", expires_in=-1)
    assert took_over(local_repo) == "expired"


def test_live_holder_past_ttl_keeps_renewing(local_repo: Path) -> None:
    recv, send = CTX.Pipe(duplex=False)
    proc = CTX.Process(target=held_worker, args=(local_repo, 0.6, send, 2.0))
    proc.start()
    try:
        assert recv.poll(20)
        token = recv.recv()
        time.sleep(1.2)  # twice the TTL: only the holder's renewals keep the lease alive
        assert took_over(local_repo) is None
        owner = read_owner(local_repo / ".michi.lock")
        assert owner is not None and owner.token == token
        assert (owner.expires_ts or 0) > time.time()
    finally:
        proc.join(20)
    assert proc.exitcode == 0
    assert not (local_repo / ".michi.lock").exists()


@pytest.mark.parametrize("content", ["", "{not json", '{"pid": 12, "host": "x"', '{"pid": "x"}', "[]"])
def test_unreadable_record_gets_a_grace_period_then_is_stale(local_repo: Path, content: str) -> None:
    lock_dir = local_repo / ".michi.lock"
    lock_dir.mkdir()
    (lock_dir / OWNER_FILE).write_text(content)
    age(lock_dir, 0)
    assert took_over(local_repo) is None  # maybe a holder publishing right now
    age(lock_dir, MISSING_RECORD_GRACE + 1)
    assert took_over(local_repo) == "corrupt"


def test_missing_record_gets_a_grace_period_then_is_stale(local_repo: Path) -> None:
    lock_dir = local_repo / ".michi.lock"
    lock_dir.mkdir()
    assert took_over(local_repo) is None
    age(lock_dir, MISSING_RECORD_GRACE + 1)
    assert took_over(local_repo) == "no_record"


def test_lock_path_that_is_a_file_is_refused(local_repo: Path) -> None:
    (local_repo / ".michi.lock").write_text("precious")
    with pytest.raises(LockPathInvalid, match="a file"):
        new_lock(local_repo).acquire(1)
    assert (local_repo / ".michi.lock").read_text() == "precious"


@pytest.mark.parametrize("dangling", [False, True])
def test_lock_path_that_is_a_symlink_is_never_followed(
    local_repo: Path, tmp_path: Path, dangling: bool
) -> None:
    target = tmp_path / "elsewhere"
    if not dangling:
        target.mkdir()
        (target / "keep").write_text("x")
    (local_repo / ".michi.lock").symlink_to(target)
    with pytest.raises(LockPathInvalid, match="symlink"):
        new_lock(local_repo).acquire(1)
    assert (local_repo / ".michi.lock").is_symlink()
    assert dangling or (target / "keep").exists()
    assert not target.exists() or not (target / OWNER_FILE).exists()


def test_lost_lock_is_detected_and_never_removed(local_repo: Path) -> None:
    first = new_lock(local_repo, ttl=0.2)
    first.acquire(0)
    time.sleep(0.3)  # the lease runs out without renewal
    second = new_lock(local_repo)
    second.acquire(0)
    with pytest.raises(LockLost):
        first.ensure_held()
    with pytest.raises(LockLost):
        first.renew()
    first.release()  # must not remove the lock that replaced ours
    second.ensure_held()
    second.release()


def _immutable(path: Path, on: bool) -> None:
    if os.geteuid() == 0:  # root ignores permissions; the immutable attribute stops even root
        if shutil.which("chattr") is None:
            pytest.skip("chattr is needed to make a directory read-only for root")
        subprocess.run(["chattr", "+i" if on else "-i", str(path)], check=True)
    else:
        path.chmod(0o555 if on else 0o755)


def test_read_only_repository_is_a_clear_error(local_repo: Path) -> None:
    new_lock(local_repo).acquire(0)  # state dir and exclude entry exist, as in any used clone
    shutil.rmtree(local_repo / ".michi.lock")
    _immutable(local_repo, True)
    try:
        with pytest.raises(LockPathInvalid) as caught:
            new_lock(local_repo).acquire(0)
    finally:
        _immutable(local_repo, False)
    assert caught.value.code == "lock_unwritable"
    assert caught.value.exit_code == 2


def test_a_full_disk_is_storage_failed_not_a_read_only_repository(
    local_repo: Path, monkeypatch: pytest.MonkeyPatch, cli: Callable[..., CliResult]
) -> None:
    """No space left (ENOSPC) where the lock's folder is made: exit 5 `storage_failed` (free space, then
    retry), as for every other write of michi's there. It said exit 2 `lock_unwritable`, a usage error,
    with "check permissions, or a read-only mount": the wrong cause, and an agent stops on exit 2."""
    new_lock(local_repo).acquire(0)  # state dir and exclude entry exist, as in any used clone
    shutil.rmtree(local_repo / ".michi.lock")
    real = os.mkdir

    def full(path: str | os.PathLike[str], *args: int, **kw: int) -> None:
        if os.fspath(path).endswith(".michi.lock"):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), os.fspath(path))
        real(path, *args, **kw)

    monkeypatch.setattr(os, "mkdir", full)
    with pytest.raises(StorageFailed) as caught:
        new_lock(local_repo).acquire(0)
    assert caught.value.code == "storage_failed" and caught.value.exit_code == 5
    result = cli(local_repo, "--json", "task", "add", "x")
    assert result.exit_code == 5, result.stdout + result.stderr
    error = result.json()["error"]
    assert error["code"] == "storage_failed" and "No space left" in error["message"]
    assert "free space" in error["hint"]


def _in_own_pid_namespace() -> list[str] | None:
    """A command prefix running a program in a PID namespace of its own (and its own /proc), or None
    where this machine allows none (no `unshare`, no user namespaces for this user)."""
    if shutil.which("unshare") is None:
        return None
    for prefix in (
        ["unshare", "--pid", "--fork", "--mount-proc"],
        ["unshare", "--user", "--map-root-user", "--pid", "--fork", "--mount-proc"],
    ):
        if subprocess.run([*prefix, "true"], capture_output=True).returncode == 0:
            return prefix
    return None


def test_a_holder_in_another_pid_namespace_is_not_judged_by_its_pid(local_repo: Path) -> None:
    """Two sandboxes on one host (bubblewrap's `--unshare-pid`, containers sharing the host's name and
    kernel) share the repository but not their PIDs: the holder's PID 1 there is another process here
    (or none), so its lock was "taken over" while it ran. Its PID means nothing here: only its lease
    decides, as for a holder on another host."""
    prefix = _in_own_pid_namespace()
    if prefix is None:
        pytest.skip("no PID namespace can be made here")
    hold = "import sys; print('held', flush=True); sys.stdin.read()"
    holder = subprocess.Popen(
        [*prefix, sys.executable, "-m", "michi", "lock", "run", "--", sys.executable, "-c", hold],
        cwd=local_repo,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        lock = new_lock(local_repo)
        with pytest.raises(LockContention):
            lock.acquire(0)
    finally:
        assert holder.stdin is not None
        holder.stdin.close()
        holder.wait()
    assert holder.returncode == 0
    new_lock(local_repo).acquire(0)  # released by its holder: free
