"""`michi lock run --remote -- CMD...`: run a command holding the remote's lock (ADR 0009).

The command runs in its own process group so that losing the lock stops all of it (a `sh -c` and the
`git push` it started), not just its first process. A process group of its own is a background job as
far as the terminal is concerned, so when michi runs in the foreground of a terminal it hands the
terminal to the command's group, as a shell does (ssh and credential prompts read /dev/tty), and takes
it back afterwards. The child never outlives michi unguarded: PR_SET_PDEATHSIG kills it if michi dies.

This runner is the remote lock's own; the local `lock run` has its own (both could share one).
"""

from __future__ import annotations

import contextlib
import os
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator

from michi.commands.lock_run import RunResult
from michi.errors import GitFailed, LockError, UsageError
from michi.lock.keeper import sigterm_raises
from michi.lock.remote import OnWait, RemoteLock
from michi.lock.remote_keeper import STOP_GRACE, RemoteKeeper
from michi.lock.remote_record import FENCE_ENV, REMOTE_TOKEN_ENV
from michi.session import Session

PR_SET_PDEATHSIG = 1
MAX_GRACE = 5.0  # seconds between SIGTERM and SIGKILL of the command's group, at most
LOST_RELEASE_TIMEOUT = 5.0  # a lock already lost is released best-effort, briefly


def _foreground_tty() -> int | None:
    """stdin's terminal if michi is its foreground job (only then may the command's group take it)."""
    try:
        if os.isatty(0) and os.tcgetpgrp(0) == os.getpgrp():
            return 0
    except OSError:
        pass
    return None


def _give_terminal(fd: int, pgid: int) -> None:
    # A background group that calls tcsetpgrp gets SIGTTOU unless it ignores it (what shells do).
    previous = signal.signal(signal.SIGTTOU, signal.SIG_IGN)
    try:
        with contextlib.suppress(OSError):
            os.tcsetpgrp(fd, pgid)
    finally:
        signal.signal(signal.SIGTTOU, previous)


def _preexec(tty: int | None) -> Callable[[], None]:
    parent = os.getpid()
    prctl: Callable[..., int] | None = None
    if sys.platform.startswith("linux"):
        import ctypes

        prctl = ctypes.CDLL(None, use_errno=True).prctl  # loaded before fork

    def preexec() -> None:  # in the child, after setpgid (process_group=0), before exec
        if prctl is not None:
            prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
            if os.getppid() != parent:  # michi died before prctl took effect
                os.kill(os.getpid(), signal.SIGKILL)
        if tty is not None:  # both sides take it, so the command never starts as a background job
            _give_terminal(tty, os.getpid())

    return preexec


def stop_group(child: subprocess.Popen[bytes], grace: float) -> None:
    """SIGTERM the command's whole group, SIGKILL whatever is left after `grace` seconds."""
    pgid = child.pid
    try:
        os.killpg(pgid, signal.SIGTERM)
    except ProcessLookupError:
        return
    end = time.monotonic() + grace
    while time.monotonic() < end:
        child.poll()  # reap the leader: a zombie still counts as a member of its group
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.02)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, signal.SIGKILL)


@contextlib.contextmanager
def _terminal(tty: int | None, pgid: int) -> Iterator[None]:
    if tty is not None:
        _give_terminal(tty, pgid)
    try:
        yield
    finally:
        if tty is not None:
            _give_terminal(tty, os.getpgrp())


def _run_held(lock: RemoteLock, argv: list[str], grace: float) -> int:
    assert lock.record is not None
    env = {**os.environ, FENCE_ENV: str(lock.record.fence), REMOTE_TOKEN_ENV: lock.record.token}
    tty = _foreground_tty()
    try:
        # Spawned before the keeper thread starts: forking with preexec_fn is safest single-threaded.
        child = subprocess.Popen(argv, env=env, preexec_fn=_preexec(tty), process_group=0)
    except OSError as exc:
        raise UsageError(f"cannot run {argv[0]!r}: {exc.strerror or exc}", code="command_failed") from None
    keeper = RemoteKeeper(lock, on_lost=lambda: stop_group(child, grace))
    with _terminal(tty, child.pid):
        keeper.start()
        try:
            code = child.wait()
        except BaseException:
            keeper.stop()
            stop_group(child, grace)
            child.wait()
            raise
        finally:
            keeper.stop()
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
    with sigterm_raises():  # from before the child exists, so a SIGTERM never skips stopping it
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
