"""The repo lock: `.michi.lock/` made by atomic mkdir, owned by the token in its record (ADR 0003).

Mutual exclusion is the directory; the guard flock serializes every change to it (fs.py); the baton flock
and the waiters' queue only decide who tries when, and how fast they learn to (wake.py, queue.py).
"""

from __future__ import annotations

import contextlib
import fcntl
import math
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Protocol, TypeGuard

from michi import faults, threads  # faults: a leaf module (os, signal and threading only)
from michi.host import hostname
from michi.lock import events, fs, late, lost, procs
from michi.lock.errors import Answered, LockContention, LockLost, LockTimeout, guard_held_by
from michi.lock.interface import LockInterface
from michi.lock.keeper import Keeper, sigterm_raises
from michi.lock.queue import Queue, Ticket, pid_of
from michi.lock.record import (
    COMMAND_CHARS,
    TOKEN_ENV,
    CorruptRecord,
    Judgement,
    Owner,
    boot_clock,
    boot_id,
    iso,
    judge,
    pid_namespace,
    read_owner,
    same_machine,
    token_of,
)
from michi.lock.record import write_owner as publish
from michi.lock.wake import POLL_CAP, WATCH_CAP, Backoff, Waker, is_flocked, wait_flock
from michi.repo import RepoPaths
from michi.unique import token_hex

BATON_FILE = "lock.baton"
NESTED_FILE = "lock.nested"  # michis working under one inherited lock take turns on this flock
QUEUE_DIR = "lock-queue"
REPORT_EVERY = 0.1  # how often `on_wait` hears how long we have waited
GUARD_WAIT_MIN = 0.05  # the guard waited for at least this long, even at the deadline (`--wait 0`)


class Handover(Protocol):
    """Work a waiter offers to the holder while it waits (group commit, ADR 0017)."""

    def post(self) -> None:
        """Offer the work: called once, when the first try failed and the wait begins."""

    def answered(self) -> bool:
        """The holder did the work: stop waiting (`acquire` raises `Answered`)."""

    def withdraw(self) -> bool:
        """At the deadline: True when the work is ours again; False when a holder has it (keep waiting)."""


def peek(lock_dir: Path) -> tuple[Owner | None, Judgement]:
    """The holder's record and whether it is stale, without any lock; a corrupt record is like none."""
    try:
        owner = read_owner(lock_dir)
    except CorruptRecord:
        verdict = judge(None, lock_mtime=fs.lock_mtime(lock_dir))
        return None, Judgement(verdict.stale, "corrupt" if verdict.stale else verdict.reason)
    return owner, judge(owner, lock_mtime=fs.lock_mtime(lock_dir))


def _clock() -> float:
    """Seconds that also count while the machine was suspended (a lease runs out during suspend too)."""
    return boot_clock()


def _unguarded(owner: Owner | None, verdict: Judgement) -> TypeGuard[Owner]:
    """Whether the holder's `lock run` group may still run with nobody holding the lock for it: its holder
    is dead (`orphans`), or its lease ran out on this machine, where its group can be seen and ended (a
    paused holder's command runs on; another machine's cannot be reached, and fencing covers it). A taker
    ends that group first (`RepoLock._end_group`)."""
    if owner is None or not owner.pgid:
        return False
    return verdict.reason == "orphans" or (verdict.reason == "expired" and same_machine(owner))


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
        handover: Handover | None = None,
        forks: tuple[tuple[int, int | None], ...] = (),
        by: tuple[int, int | None] | None = None,
    ) -> None:
        self.repo, self.ttl, self.command, self.agent = repo, ttl, command[:COMMAND_CHARS], agent
        self.forks = forks  # a script holder's subshells (`procs.script_chain`): its lock while they run
        self.by = by  # the script that took the lock for `pid` (`lock acquire --pid`): `Owner.by`
        self.handover = handover
        self.pid = os.getpid() if pid is None else pid
        self.on_wait = on_wait
        self.lock_dir = repo.lock_dir
        self.queue = Queue(repo.state_dir / QUEUE_DIR)
        self._baton_path = repo.state_dir / BATON_FILE
        self._guard_fd: int | None = None
        self._guard_busy = False  # the last try found the guard held past its deadline (`fs.GuardBusy`)
        self._queued: int | None = None  # the last try found the lock free but left it to this waiter
        self._baton_fd: int | None = None
        self._token: str | None = None
        self._handler: Callable[[], None] | None = None
        self._keeper: Keeper | None = None
        self._held_since = 0.0
        self._acquired: dict[str, object] = {}
        self._pid_ticks: int | None = None
        self._fence = 0
        self._joined = False  # working under a holder's lock whose token we inherited (not ours to release)
        self._nested_fd: int | None = None
        self._renewed_at = 0.0
        self.ended: list[int] = []  # processes a dead holder left running, which we ended to take over
        self.left: str | None = None  # why the last release left the lock in place (the guard stuck)
        self.record: Owner | None = None  # as published when we acquired

    @property
    def fence(self) -> int | None:
        """This hold's fencing token: higher than every earlier hold's in this repository (ADR 0003)."""
        return self._fence if self._token is not None else None

    @property
    def joined(self) -> bool:
        return self._joined

    @property
    def token(self) -> str | None:
        return self._token

    def _guard(self) -> int:
        if self._guard_fd is None:
            fs.ensure_dir(self.repo.state_dir)
            self._guard_fd = fs.open_flock_file(self.repo.state_dir / fs.GUARD_FILE)
        return self._guard_fd

    def _record(self, token: str, fence: int) -> Owner:
        now = time.time()
        return Owner(
            pid=self.pid,
            host=hostname(),
            boot_id=boot_id(),
            pid_ticks=self._pid_ticks,
            created=iso(now) or "",
            expires=iso(now + self.ttl) if self.ttl else None,
            token=token,
            command=self.command,
            agent=self.agent,
            fence=fence,
            pidns=pid_namespace(),
            expires_boot=round(boot_clock() + self.ttl, 3) if self.ttl else None,
            forks=self.forks,
            by=self.by,
        )

    def _attempt(self, ticket: Ticket | None, deadline: float) -> tuple[bool, Owner | None, str | None]:
        """One try: (acquired, holder, takeover reason). A newcomer never jumps a queue of waiters. The
        guard is waited for until `deadline` at most (a moment more for `--wait 0`): a process stopped
        inside it (SIGSTOP while it renewed its lease) holds it until resumed, and the wait must end."""
        owner: Owner | None = None
        self._guard_busy, self._queued = False, None
        try:
            return self._try(ticket, deadline)
        except fs.GuardBusy:
            self._guard_busy = True
            if fs.check_lock_path(self.lock_dir):
                owner = peek(self.lock_dir)[0]
            return False, owner, None

    def _try(self, ticket: Ticket | None, deadline: float) -> tuple[bool, Owner | None, str | None]:
        if fs.check_lock_path(self.lock_dir):
            owner, verdict = peek(self.lock_dir)
            if not verdict.stale and not _unguarded(owner, verdict):
                return False, owner, None
        elif ticket is None and (first := self.queue.ahead_of(None)) is not None:
            self._queued = pid_of(first)  # a running waiter: a stopped one is passed over (ADR 0003)
            return False, None, None
        takeover, old = None, None
        with fs.guarded(self._guard(), max(GUARD_WAIT_MIN, deadline - time.monotonic())):
            # Re-judged under the guard: whoever took the guard before us may have replaced the lock.
            if fs.check_lock_path(self.lock_dir):
                old, verdict = peek(self.lock_dir)
                if _unguarded(old, verdict):
                    verdict = self._end_group(old)
                if not verdict.stale:
                    return False, old, None
                fs.remove_lock_dir(self.lock_dir)
                takeover = verdict.reason
            if not fs.make_lock_dir(self.lock_dir):
                return False, None, None  # made by something that does not take the guard
            token = token_hex(16)
            fence = fs.next_fence(self._guard(), old.fence if old else 0, self._logged_fence)
            record = self._record(token, fence)
            try:
                publish(self.lock_dir, record)
            except OSError as exc:
                fs.remove_lock_dir(self.lock_dir)
                raise fs.unwritable(self.lock_dir, exc) from None
            self._token, self._fence = token, fence
            if takeover is not None:  # under the guard: the holder we replaced can always learn of it
                lost.log_takeover(
                    self.repo.state_dir, takeover, old, self.pid, self.command, fence, self.ended
                )
        self._take_baton()
        return True, record, takeover

    def _logged_fence(self) -> int:
        """The highest fence the lock's event log names: read only when the guard's counter was lost."""
        fences = [e.get("fence") for e in events.read(self.repo.state_dir)]
        return max((f for f in fences if isinstance(f, int) and not isinstance(f, bool)), default=0)

    def _end_group(self, owner: Owner) -> Judgement:
        """End the holder's command, which runs on unguarded, and judge the record again. Only here, under
        the guard and with the take decided: a taker that ended it first and then could not get the guard
        (its holder stopped inside it, renewing) gave up and had cut the holder's work for nothing. Bounded
        by `procs.end_members`; the takeover event lists what was ended."""
        assert owner.pgid is not None
        self.ended += procs.end_members(owner.pgid, owner.pgid_ticks)
        return judge(owner, lock_mtime=fs.lock_mtime(self.lock_dir))

    def _join(self, timeout: float) -> bool:
        """Work under the lock whose token we inherited (`michi lock run -- michi task ...`) instead of
        waiting for it: only the live holder's token counts, and the hold stays the holder's. Several
        michis under one holder (`cmd1 & cmd2 &`) still take turns, on a flock of their own."""
        token = os.environ.get(TOKEN_ENV)
        if not token or not fs.check_lock_path(self.lock_dir):
            return False
        owner, verdict = peek(self.lock_dir)
        if owner is None or not owner.admits(token) or verdict.stale or verdict.reason != "live":
            return False
        fd = fs.open_flock_file(self.repo.state_dir / NESTED_FILE)
        waited = wait_flock(fd, timeout)
        if waited is not None:
            os.close(fd)
            raise LockTimeout.waited(owner, waited, time.time(), str(self.lock_dir))
        self._nested_fd = fd
        self._token, self._fence, self._joined = token, owner.fence, True
        self.record, self._renewed_at = owner, _clock()
        return True

    def _leave(self) -> None:
        self._joined = False
        if self._nested_fd is not None:
            os.close(self._nested_fd)
            self._nested_fd = None

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
        self.ended = []
        if self._join(timeout):
            return
        if self._pid_ticks is None:
            self._pid_ticks = procs.start_ticks(self.pid)
        start = time.monotonic()
        deadline = start + max(0.0, timeout)
        ok, holder, takeover = self._attempt(None, deadline)
        contended = not ok
        if not ok and timeout <= 0:
            events.append(self.repo.state_dir, "timeout", wait=0.0, command=self.command)
            raise self._busy(LockContention, holder, 0.0)
        if not ok:
            ok, holder, takeover = self._wait(start, deadline)
        waited = time.monotonic() - start
        if not ok:
            events.append(self.repo.state_dir, "timeout", wait=round(waited, 6), command=self.command)
            raise self._busy(LockTimeout, holder, waited)
        self._held_since = time.monotonic()
        self._renewed_at = _clock()
        self.record = holder
        self._acquired = {
            "wait": round(waited, 6),
            "contended": contended,
            "takeover": takeover,
            "fence": self._fence,  # where a lost guard counter goes on from (`fs.next_fence`)
        }

    def _busy(self, kind: type[LockTimeout], holder: Owner | None, waited: float) -> LockTimeout:
        """Why the lock could not be had, naming what stood in the way: a process stopped inside the
        guard, a stopped holder (`kill -CONT PID`), the holder, or the waiter whose turn came first."""
        if self._guard_busy:
            pid, stopped = fs.guard_holder(self._guard())
            if stopped or kind is LockTimeout:  # one try's short wait names a running one only if stopped
                return kind.guard_stuck(pid, stopped, waited, str(self.lock_dir))
        if holder is None and self._queued is not None:
            return kind.queued(self._queued, waited, time.time(), str(self.lock_dir))
        return kind.waited(holder, waited, time.time(), str(self.lock_dir))

    def _wait(self, start: float, deadline: float) -> tuple[bool, Owner | None, str | None]:
        hand = self.handover
        if hand is not None:
            hand.post()
        # Named by this process, which holds the ticket's flock and whose being stopped the queue sees,
        # not by the holder it would record (a script, `lock acquire --pid`).
        ticket = self.queue.join(os.getpid())
        waker, backoff = Waker(), Backoff()
        holder: Owner | None = None
        reported = start
        try:
            while True:
                waker.event.clear()
                if hand is not None and hand.answered():
                    raise Answered
                ahead = self.queue.ahead_of(ticket)
                now = time.monotonic()
                if ahead is None or now >= deadline:
                    ok, holder, takeover = self._attempt(ticket, deadline)
                    if ok:
                        return True, holder, takeover
                    if now >= deadline:
                        if hand is None or hand.withdraw():
                            return False, holder, None
                        # A holder took our work: its answer, or its death (then the lock), ends the wait.
                        deadline = math.inf
                if hand is not None and is_flocked(self._baton_path):
                    waker.watch(self._baton_path)  # the holder answers before it lets go of the baton
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
        if self._joined:  # the holder's lock, not ours: leave it held
            if self._keeper is not None:
                self._keeper.stop()
                self._keeper = None
            self._leave()
            return
        try:
            if self._keeper is not None:
                self._keeper.stop()
                self._keeper = None
            try:
                with fs.guarded(self._guard(), fs.GUARD_WAIT):
                    if token_of(self.lock_dir) == token:
                        fs.remove_lock_dir(self.lock_dir)
            except fs.GuardBusy:
                # Left in place: removed by a thread of ours once the guard is free, or, should this
                # process end first, stale and taken over. What the hold did is done either way.
                self.left = self._left_in_place()
                events.append(self.repo.state_dir, "release_left", command=self.command, reason=self.left)
                guard = self.repo.state_dir / fs.GUARD_FILE
                late.release_when_free(self.lock_dir, guard, token, self.repo.state_dir, self.command)
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
        if self._joined:
            self._leave()
            return token
        self._drop_baton()
        events.append(self.repo.state_dir, "acquire", command=self.command, **self._acquired)
        return token

    def renew(self) -> None:
        token = self._token
        if token is None:
            raise LockLost("the repo lock is not held", hint="acquire it first")
        if self._joined:  # the holder renews its own lease; we only check it is still its lock
            self.ensure_held()
            return
        try:
            with fs.guarded(self._guard(), min(fs.GUARD_WAIT, max(GUARD_WAIT_MIN, self.ttl / 3))):
                faults.point("renewing")  # a holder stopped here keeps the guard (`renewing:SIGSTOP`)
                try:
                    owner = read_owner(self.lock_dir)
                except CorruptRecord:
                    owner = None
                if owner is None or owner.token != token:
                    raise self._lost(owner)
                if self.ttl:
                    publish(self.lock_dir, owner.renewed(self.ttl))
        except fs.GuardBusy:
            # Not renewed this time, as if this process had been paused: the next renewal tries again, and
            # should the lease run out meanwhile and the lock be taken over, `ensure_held` says so before
            # anything irreversible (ADR 0003).
            return
        self._renewed_at = _clock()

    def set_group(self, pgid: int, ticks: int | None) -> None:
        """Record the process group `lock run`'s command runs in: while any of it runs, the lock is not
        stale even if michi dies (a taker ends the group first)."""
        if self._joined or self._token is None:
            return
        try:
            with fs.guarded(self._guard(), fs.GUARD_WAIT):
                owner = read_owner(self.lock_dir)
                if owner is not None and owner.token == self._token:
                    publish(self.lock_dir, replace(owner, pgid=pgid, pgid_ticks=ticks))
        except fs.GuardBusy:
            # Unrecorded, a taker could not end the group should this process die: it does not start.
            raise fs.stuck(self._guard(), fs.GUARD_WAIT, str(self.lock_dir)) from None

    def _left_in_place(self) -> str:
        pid, stopped = fs.guard_holder(self._guard())
        resume = f" (`kill -CONT {pid}`)" if stopped and pid is not None else ""
        return (
            f"the repo lock was left in place: its guard is held by {guard_held_by(pid, stopped)} and was "
            f"not let go within {fs.GUARD_WAIT:g}s; it is let go as soon as that one is resumed{resume} or "
            f"ended (taken over then if this process has ended)"
        )

    def _lost(self, owner: Owner | None, token: str | None = None) -> LockLost:
        token = token or self._token or ""
        paused = _clock() - self._renewed_at if self._renewed_at else None
        message, details = lost.explain(self.repo.state_dir, token, self._fence, owner, paused, self.ttl)
        return LockLost(
            message,
            hint="nothing more was done and nothing was pushed; run the command again (raise lock_ttl if "
            "pauses this long are expected)",
            lock=str(self.lock_dir),
            **details,
        )

    def ensure_held(self) -> None:
        """Before each irreversible step: the record still carries our token and no later fence was
        handed out in this repository (a stale fence means someone else has held the lock since)."""
        token = self._token
        if token is None:
            raise LockLost("the repo lock is not held", hint="acquire it first")
        try:
            owner = read_owner(self.lock_dir)
        except CorruptRecord:
            owner = None
        # Joined: the holder's token or, for a michi a nested holder started, its own (`Owner.admits`).
        ours = owner is not None and (owner.admits(token) if self._joined else owner.token == token)
        if not ours or fs.read_fence(self._guard()) > self._fence:
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
        try:
            # A SIGTERM that comes while the keeper starts is raised once it runs, here: stopped below.
            threads.start(self._keeper)
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
