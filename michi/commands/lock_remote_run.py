"""`michi lock run --remote -- CMD...`: run a command holding the remote's lock (ADR 0009).

The command runs through the local `lock run`'s process group (`michi.lock.group`, ADR 0003): losing
the lock stops all of it (a `sh -c` and the `git push` it started), not just its first process; at a
terminal the group gets the terminal while it runs; the child never outlives michi unguarded; and what
the command leaves running when it exits is stopped before the lock is released.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import signal

from michi import threads
from michi.commands.lock_run import RunResult
from michi.errors import GitFailed, LockError, UsageError
from michi.lock.errors import not_runnable
from michi.lock.group import Group
from michi.lock.remote import OnWait, RemoteLock
from michi.lock.remote_keeper import STOP_GRACE, RemoteKeeper
from michi.lock.remote_record import FENCE_ENV, REMOTE_TOKEN_ENV
from michi.session import Session
from michi.threads import HELD_BACK
from michi.workflow.signals import terminating

MAX_GRACE = 5.0  # seconds between SIGTERM and SIGKILL of the command's group, at most
LOST_RELEASE_TIMEOUT = 5.0  # a lock already lost is released best-effort, briefly


def _run_held(lock: RemoteLock, argv: list[str], grace: float) -> int:
    assert lock.record is not None
    env = {**os.environ, FENCE_ENV: str(lock.record.fence), REMOTE_TOKEN_ENV: lock.record.token}
    # Signals held back while the group and its sentinel are forked (as `lock run` does): one that came
    # between a fork and the child's own handlers ran michi's in the copy, which then released the lock.
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, HELD_BACK)
    try:
        # Started before the keeper thread: forking with a preexec function is safest single-threaded.
        group = Group.start(argv, env)
    except OSError as exc:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        raise not_runnable(argv, exc) from None
    except BaseException:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        raise

    def stop_command() -> None:
        group.stop(grace)

    keeper = RemoteKeeper(lock, on_lost=stop_command)
    try:
        try:
            try:
                group.go()
            finally:
                signal.pthread_sigmask(signal.SIG_SETMASK, mask)  # what came meanwhile is raised here
            threads.start(keeper)
            code = group.wait()
        finally:
            keeper.stop()
            group.stop(grace)  # on an error, and what the command left running when it exited
    finally:
        group.close()
    if keeper.lost is not None:
        raise keeper.lost
    return code


def run(
    session: Session, argv: list[str], *, ttl: float | None, wait: float | None, on_wait: OnWait | None
) -> RunResult:
    if not argv:
        raise UsageError("no command to run", hint="michi lock run --remote [--wait S] -- COMMAND [ARGS...]")
    from michi.commands.lock_remote import open_lock

    lock = open_lock(session, ttl=ttl, command=f"lock run {shlex.join(argv)}"[:200], on_wait=on_wait)
    grace = min(MAX_GRACE, STOP_GRACE * lock.ttl)
    wait_s = session.with_overrides(lock_wait=wait).lock_wait
    with terminating():  # from before the child exists, so a SIGTERM never skips stopping it
        lock.acquire(wait_s)
        try:
            code = _run_held(lock, argv, grace)
        except LockError:
            with contextlib.suppress(LockError, GitFailed):  # lost: release only if it is still ours
                lock.release(timeout=LOST_RELEASE_TIMEOUT)
            raise
        except BaseException:
            with contextlib.suppress(LockError, GitFailed):
                lock.release()
            raise
        try:
            lock.release()  # lock_lost here: someone took it over while the command ran (say so)
        except GitFailed as exc:
            exc.hint = (
                f"the command finished (exit {code}) but the lock could not be released: others take it "
                "over once it has gone unrenewed for its TTL; `michi lock status --remote` shows it"
            )
            raise
    return RunResult(command=argv, returncode=128 - code if code < 0 else code)
