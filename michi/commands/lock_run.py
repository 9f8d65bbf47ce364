"""`michi lock run -- CMD...`: run any command under the repo lock, as flock(1) does (ADR 0003).

The command runs in its own process group (`michi.lock.group`): the lock covers everything it starts,
and is released only once none of it runs. The command gets the lock's token in MICHI_LOCK_TOKEN (its
commits pass the hook; a michi it starts works under this lock instead of waiting for it) and the
hold's fencing token in MICHI_LOCK_FENCE.
"""

from __future__ import annotations

import os
import shlex
import signal
from collections.abc import Callable
from dataclasses import dataclass, field

from michi.errors import UsageError
from michi.lock import TOKEN_ENV, Owner, RepoLock
from michi.lock.errors import not_runnable
from michi.lock.group import Group
from michi.lock.record import FENCE_ENV
from michi.results import Result
from michi.session import Session
from michi.threads import HELD_BACK
from michi.workflow.signals import terminating


@dataclass(frozen=True)
class RunResult(Result):
    command: list[str]
    returncode: int  # as the shell reports it: 128 + N when the child died of signal N
    ended: list[int] = field(default_factory=list)  # its background processes michi ended at exit
    # What the last holder's command left running, ended to take over (the holder dead, or its lease run
    # out while it was paused).
    reclaimed: list[int] = field(default_factory=list)
    signal: int | None = None  # the signal the command died of (`returncode` is then 128 + it)

    @property
    def exit_code(self) -> int:  # type: ignore[override]  # the child's status is ours
        return self.returncode


def _start(lock: RepoLock, argv: list[str]) -> Group:
    env = {**os.environ, TOKEN_ENV: lock.token or "", FENCE_ENV: str(lock.fence or "")}
    try:
        # Started before the renewal thread: forking with a preexec function is safest single-threaded.
        return Group.start(argv, env, own_group=not lock.joined)
    except OSError as exc:  # it never ran: 127 or 126 as a shell says, never a status it could give
        raise not_runnable(argv, exc) from None


def _run_locked(lock: RepoLock, argv: list[str], wait: float) -> tuple[int, list[int]]:
    """The command's status and the PIDs of what it left running, which were ended."""
    lock.acquire(wait)
    try:
        mask = signal.pthread_sigmask(signal.SIG_BLOCK, HELD_BACK)
        try:
            group = _start(lock, argv)
        except BaseException:
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)
            raise
        try:
            try:
                if group.pgid is not None:
                    lock.set_group(group.pgid, group.ticks)  # not cut off halfway by a signal
                group.go()
            finally:
                # A SIGTERM or Ctrl-C that came meanwhile is raised here, where the finally stops the group.
                signal.pthread_sigmask(signal.SIG_SETMASK, mask)
            with lock.keeping(on_lost=lambda: group.signal(signal.SIGTERM)):
                code = group.wait()
        finally:
            # On exit, stop, Ctrl-C or loss alike: nothing of the command outlives the lock.
            try:
                left = group.stop()
            finally:
                group.close()
        lock.ensure_held()  # a command that ran on after losing the lock did so unguarded: say so
    finally:
        lock.release()
    return code, [pid for pid in left if pid != group.child.pid]


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
    with terminating():  # from before the child exists, so a SIGTERM never skips stopping it
        code, ended = _run_locked(lock, argv, cfg.lock_wait)
    status = 128 - code if code < 0 else code
    return RunResult(
        command=argv,
        returncode=status,
        ended=ended,
        reclaimed=list(lock.ended),
        signal=-code if code < 0 else None,
    )
