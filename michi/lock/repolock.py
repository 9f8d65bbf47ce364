"""The repo lock: `.michi.lock/` made by atomic mkdir, owned by the token in its record (ADR 0003).

Mutual exclusion is the directory; the guard flock serializes every change to it (fs.py); the baton flock
and the waiters' queue only decide who tries when, and how fast they learn to (wake.py, queue.py).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import secrets
import socket
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path

from michi.lock import events, fs
from michi.lock.errors import LockContention, LockLost, LockTimeout
from michi.lock.interface import LockInterface
from michi.lock.keeper import Keeper, sigterm_raises
from michi.lock.queue import Queue, Ticket
from michi.lock.record import CorruptRecord, Judgement, Owner, boot_id, iso, judge, process_start, read_owner
from michi.lock.record import write_owner as publish
from michi.lock.wake import POLL_CAP, WATCH_CAP, Backoff, Waker, is_flocked
from michi.repo import RepoPaths

BATON_FILE = "lock.baton"
QUEUE_DIR = "lock-queue"
REPORT_EVERY = 0.1  # how often `on_wait` hears how long we have waited


def peek(lock_dir: Path) -> tuple[Owner | None, Judgement]:
    """The holder's record and whether it is stale, without any lock; a corrupt record is like none."""
    try:
        owner = read_owner(lock_dir)
    except CorruptRecord:
        verdict = judge(None, lock_mtime=fs.lock_mtime(lock_dir))
        return None, Judgement(verdict.stale, "corrupt" if verdict.stale else verdict.reason)
    return owner, judge(owner, lock_mtime=fs.lock_mtime(lock_dir))


def _token_of(lock_dir: Path) -> str | None:
    try:
        owner = read_owner(lock_dir)
    except CorruptRecord:
        return None
    return owner.token if owner is not None else None


class RepoLock(LockInterface):
    def __init__(
        self,
        repo: RepoPaths,
        *,
        ttl: float,
        command: str,
        agent: str | None,
        pid: int | None = None,
        on_wait: Callable[[Owner | None, float], None] | None = None,
    ) -> None:
        self.repo, self.ttl, self.command, self.agent = repo, ttl, command, agent
        self.pid = os.getpid() if pid is None else pid
        self.on_wait = on_wait
        self.lock_dir = repo.lock_dir
        self.queue = Queue(repo.state_dir / QUEUE_DIR)
        self._baton_path = repo.state_dir / BATON_FILE
        self._guard_fd: int | None = None
        self._baton_fd: int | None = None
        self._token: str | None = None
        self._handler: Callable[[], None] | None = None
        self._keeper: Keeper | None = None
        self._held_since = 0.0
        self._acquired: dict[str, object] = {}
        self._pid_start: float | None = None
        self.record: Owner | None = None  # as published when we acquired

    @property
    def token(self) -> str | None:
        return self._token

    def _guard(self) -> int:
        if self._guard_fd is None:
            fs.ensure_dir(self.repo.state_dir)
            self._guard_fd = fs.open_flock_file(self.repo.state_dir / fs.GUARD_FILE)
        return self._guard_fd

    def _record(self, token: str) -> Owner:
        now = time.time()
        return Owner(
            pid=self.pid,
            host=socket.gethostname(),
            boot_id=boot_id(),
            pid_start=self._pid_start,
            created=iso(now) or "",
            expires=iso(now + self.ttl) if self.ttl else None,
            token=token,
            command=self.command,
            agent=self.agent,
        )

    def _attempt(self, ticket: Ticket | None) -> tuple[bool, Owner | None, str | None]:
        """One try: (acquired, holder, takeover reason). A newcomer never jumps a queue of waiters."""
        if fs.check_lock_path(self.lock_dir):
            owner, verdict = peek(self.lock_dir)
            if not verdict.stale:
                return False, owner, None
        elif ticket is None and self.queue.has_waiters():
            return False, None, None
        takeover = None
        with fs.guarded(self._guard()):
            # Re-judged under the guard: whoever took the guard before us may have replaced the lock.
            if fs.check_lock_path(self.lock_dir):
                owner, verdict = peek(self.lock_dir)
                if not verdict.stale:
                    return False, owner, None
                fs.remove_lock_dir(self.lock_dir)
                takeover = verdict.reason
            if not fs.make_lock_dir(self.lock_dir):
                return False, None, None  # made by something that does not take the guard
            token = secrets.token_hex(16)
            record = self._record(token)
            try:
                publish(self.lock_dir, record)
            except OSError as exc:
                fs.remove_lock_dir(self.lock_dir)
                raise fs.unwritable(self.lock_dir, exc) from None
            self._token = token
        self._take_baton()
        return True, record, takeover

    def _take_baton(self) -> None:
        fd = fs.open_flock_file(self._baton_path)
        for _ in range(100):  # a waiter's shared flock lasts microseconds; never block on a hung one
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                self._baton_fd = fd
                return
            except BlockingIOError:
                time.sleep(0.0001)
        os.close(fd)  # without the baton, waiters fall back to polling

    def _drop_baton(self) -> None:
        if self._baton_fd is not None:
            os.close(self._baton_fd)
            self._baton_fd = None

    def acquire(self, timeout: float) -> None:
        if self._token is not None:
            raise RuntimeError("this RepoLock is already held; release it first")
        fs.exclude_lock(self.repo.common_dir)
        self._guard()
        if self._pid_start is None:  # psutil loads here, not while we hold the guard
            self._pid_start = process_start(self.pid)
        start = time.monotonic()
        deadline = start + max(0.0, timeout)
        ok, holder, takeover = self._attempt(None)
        contended = not ok
        if not ok and timeout <= 0:
            events.append(self.repo.state_dir, "timeout", wait=0.0, command=self.command)
            raise LockContention.waited(holder, 0.0, time.time(), str(self.lock_dir))
        if not ok:
            ok, holder, takeover = self._wait(start, deadline)
        waited = time.monotonic() - start
        if not ok:
            events.append(self.repo.state_dir, "timeout", wait=round(waited, 6), command=self.command)
            raise LockTimeout.waited(holder, waited, time.time(), str(self.lock_dir))
        self._held_since = time.monotonic()
        self.record = holder
        self._acquired = {"wait": round(waited, 6), "contended": contended, "takeover": takeover}

    def _wait(self, start: float, deadline: float) -> tuple[bool, Owner | None, str | None]:
        ticket = self.queue.join(self.pid)
        waker, backoff = Waker(), Backoff()
        holder: Owner | None = None
        reported = start
        try:
            while True:
                waker.event.clear()
                ahead = self.queue.ahead_of(ticket)
                now = time.monotonic()
                if ahead is None or now >= deadline:
                    ok, holder, takeover = self._attempt(ticket)
                    if ok:
                        return True, holder, takeover
                    if now >= deadline:
                        return False, holder, None
                if ahead is not None:
                    waker.watch(self.queue.path(ahead))
                    pause = REPORT_EVERY
                elif is_flocked(self._baton_path):
                    waker.watch(self._baton_path)
                    backoff.cap = WATCH_CAP
                    pause = backoff.next()
                else:
                    backoff.cap = POLL_CAP
                    pause = backoff.next()
                if self.on_wait is not None and now - reported >= REPORT_EVERY:
                    reported = now
                    if ahead is not None:
                        holder = peek(self.lock_dir)[0]
                    self.on_wait(holder, now - start)
                waker.event.wait(max(0.0, min(pause, deadline - time.monotonic())))
        finally:
            self.queue.leave(ticket)

    def release(self) -> None:
        token, self._token = self._token, None
        if token is None:
            return
        try:
            if self._keeper is not None:
                self._keeper.stop()
                self._keeper = None
            with fs.guarded(self._guard()):
                if _token_of(self.lock_dir) == token:
                    fs.remove_lock_dir(self.lock_dir)
        finally:
            self._drop_baton()
        hold = round(time.monotonic() - self._held_since, 6)
        events.append(self.repo.state_dir, "hold", hold=hold, command=self.command, **self._acquired)

    def detach(self) -> str:
        """Leave the lock in place for its recorded holder (`michi lock acquire`: a script's PID) and
        forget it here; returns the token the holder must release it with."""
        token, self._token = self._token, None
        if token is None:
            raise LockLost("the repo lock is not held", hint="acquire it first")
        self._drop_baton()
        events.append(self.repo.state_dir, "acquire", command=self.command, **self._acquired)
        return token

    def renew(self) -> None:
        token = self._token
        if token is None:
            raise LockLost("the repo lock is not held", hint="acquire it first")
        with fs.guarded(self._guard()):
            try:
                owner = read_owner(self.lock_dir)
            except CorruptRecord:
                owner = None
            if owner is None or owner.token != token:
                raise self._lost(owner)
            if self.ttl:
                publish(self.lock_dir, replace(owner, expires=iso(time.time() + self.ttl)))

    def _lost(self, owner: Owner | None) -> LockLost:
        now_by = f"PID {owner.pid} ({owner.command!r})" if owner else "nobody"
        return LockLost(
            f"lost the repo lock: it is now held by {now_by}",
            hint="the lease ran out (raise lock_ttl?); nothing more was done; run the command again",
            lock=str(self.lock_dir),
        )

    def ensure_held(self) -> None:
        if self._token is None or _token_of(self.lock_dir) != self._token:
            raise self._lost(peek(self.lock_dir)[0])

    def on_release_requested(self, handler: Callable[[], None]) -> None:
        self._handler = handler

    @contextlib.contextmanager
    def keeping(self, on_lost: Callable[[], None] | None = None) -> Iterator[RepoLock]:
        """While held: renew every TTL/3, tell the handler about waiters, make SIGTERM raise Terminated."""
        self._keeper = Keeper(
            ttl=self.ttl,
            renew=self.renew,
            has_waiters=self.queue.has_waiters,
            on_waiters=self._handler,
            on_lost=on_lost,
        )
        self._keeper.start()
        try:
            with sigterm_raises():
                yield self
        finally:
            if self._keeper is not None:
                self._keeper.stop()
                self._keeper = None

    @contextlib.contextmanager
    def held(self, timeout: float) -> Iterator[RepoLock]:
        with sigterm_raises():  # a SIGTERM while we wait must not leave a ticket or the lock behind
            self.acquire(timeout)
            try:
                with self.keeping():
                    yield self
            finally:
                self.release()

    def close(self) -> None:
        self.release()
        if self._guard_fd is not None:
            os.close(self._guard_fd)
            self._guard_fd = None
