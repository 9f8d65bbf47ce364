"""`michi lock run -- CMD...`: run any command under the repo lock, as flock(1) does (issue 2).

The child gets the lock's token in MICHI_LOCK_TOKEN (the pre-commit hook lets its commits through), and
never outlives michi unguarded: the kernel kills it if michi dies (PR_SET_PDEATHSIG), and michi stops it
before releasing when michi is interrupted, terminated or loses the lock.
"""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass

from michi.errors import UsageError
from michi.lock import TOKEN_ENV, Owner, RepoLock
from michi.lock.keeper import sigterm_raises
from michi.results import Result
from michi.session import Session

PR_SET_PDEATHSIG = 1
STOP_GRACE = 5.0  # seconds a child gets to finish after SIGTERM before SIGKILL


@dataclass(frozen=True)
class RunResult(Result):
    command: list[str]
    returncode: int  # as the shell reports it: 128 + N when the child died of signal N

    @property
    def exit_code(self) -> int:  # type: ignore[override]  # the child's status is ours
        return self.returncode


def _die_with_parent() -> Callable[[], None] | None:
    if not sys.platform.startswith("linux"):
        return None  # pragma: no cover - michi's lock targets Linux and macOS; macOS relies on stop()
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)  # loaded before fork: the child only makes two syscalls
    parent = os.getpid()

    def preexec() -> None:
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != parent:  # michi died before prctl took effect
            os.kill(os.getpid(), signal.SIGKILL)

    return preexec


def _stop(child: subprocess.Popen[bytes]) -> None:
    if child.poll() is not None:
        return
    child.terminate()
    try:
        child.wait(STOP_GRACE)
    except subprocess.TimeoutExpired:
        child.kill()
        child.wait()


def _run_locked(lock: RepoLock, argv: list[str], wait: float, preexec: Callable[[], None] | None) -> int:
    lock.acquire(wait)
    try:
        env = {**os.environ, TOKEN_ENV: lock.token or ""}
        try:
            # Spawned before the renewal thread starts: forking with preexec_fn is safest single-threaded.
            child = subprocess.Popen(argv, env=env, preexec_fn=preexec)
        except OSError as exc:
            reason = exc.strerror or str(exc)
            raise UsageError(f"cannot run {argv[0]!r}: {reason}", code="command_failed") from None
        try:
            with lock.keeping(on_lost=child.terminate):
                code = child.wait()
        except BaseException:
            _stop(child)
            raise
        lock.ensure_held()  # a child that ran on after losing the lock did so unguarded: say so
    finally:
        lock.release()
    return code


def run(
    session: Session,
    argv: list[str],
    *,
    wait: float | None,
    on_wait: Callable[[Owner | None, float], None] | None = None,
) -> RunResult:
    if not argv:
        raise UsageError("no command to run", hint="michi lock run [--wait S] -- COMMAND [ARGS...]")
    cfg = session.with_overrides(lock_wait=wait)
    lock = RepoLock(
        session.repo,
        ttl=cfg.lock_ttl,
        command=f"lock run {shlex.join(argv)}"[:200],
        agent=session.resolve_agent(),
        on_wait=on_wait,
    )
    preexec = _die_with_parent()
    with sigterm_raises():  # from before the child exists, so a SIGTERM never skips stopping it
        code = _run_locked(lock, argv, cfg.lock_wait, preexec)
    return RunResult(command=argv, returncode=128 - code if code < 0 else code)
