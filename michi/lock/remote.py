"""The remote lock (ADR 0009): one lock per remote repository, a ref on the remote naming a record commit.

Every change of the ref is a compare-and-swap push: acquire swaps a free (or expired) record for ours,
renewal swaps ours for a fresher one, release swaps ours for a free one. The remote checks the old value
under its own ref lock, so exactly one of any number of racing clones wins; losers re-read and wait.
Expiry is judged by the observer's own stopwatch (`remote_seen`), so no two clocks are ever compared.
"""

from __future__ import annotations

import contextlib
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from michi.errors import RemoteUnreachable
from michi.git import lockref
from michi.lock import events
from michi.lock import remote_errors as errors
from michi.lock.record import COMMAND_CHARS
from michi.lock.record import boot_clock as clock
from michi.lock.remote_record import MAX_RECORD_BYTES, REF, CorruptRemoteRecord, RemoteRecord, decode
from michi.lock.remote_seen import Sightings
from michi.repo import RepoPaths

FIRST_POLL = 0.05  # seconds: a loser's first re-read comes quickly (the winner may be done already)
MAX_POLL = 1.0  # the slowest re-read: each one is a round trip to the remote, shared by every waiter
NET_TIMEOUT = 30.0  # a git call that has not answered by then is treated as the remote being down
UNDO_TIMEOUT = 5.0  # seconds for cleaning up after an interrupted acquisition
READ_TRIES = 5  # a ref that keeps moving between ls-remote and fetch is re-read this often

OnWait = Callable[[RemoteRecord | None, float], None]


@dataclass(frozen=True)
class View:
    """The remote's lock as read once: its commit, its record, how long this machine has seen it."""

    oid: str | None
    record: RemoteRecord | None
    unchanged_for: float

    @property
    def held(self) -> bool:
        return self.record is not None and self.record.held

    @property
    def expired(self) -> bool:
        return self.record is not None and self.record.held and self.unchanged_for >= self.record.ttl


class RemoteLock:
    def __init__(
        self,
        repo: RepoPaths,
        *,
        remote: str,
        ttl: float,
        command: str,
        agent: str | None,
        pid: int | None = None,
        on_wait: OnWait | None = None,
    ) -> None:
        self.cwd: Path = repo.worktree
        self.state_dir, self.common_dir = repo.state_dir, repo.common_dir
        self.remote = remote
        self.ttl, self.command, self.agent, self.pid = ttl, command[:COMMAND_CHARS], agent, pid
        self.on_wait = on_wait
        self.sightings = Sightings(repo.state_dir, lockref.remote_url(self.cwd, remote) or remote)
        self._records: dict[str, RemoteRecord] = {}  # commit -> record: a commit never changes
        self.record: RemoteRecord | None = None  # ours, while we hold the lock
        self.oid: str | None = None  # the commit of our record on the remote
        self.attempts: dict[str, float] = {}  # our record commits -> clock() when their push started
        self.last_ok: float | None = None  # clock() at the start of our last write that landed
        self.acquired_at = 0.0
        self.stats: dict[str, object] = {}

    def _log(self, kind: str, **fields: object) -> None:
        with contextlib.suppress(OSError):  # metrics never fail a lock operation
            self.state_dir.mkdir(parents=True, exist_ok=True)
        events.append(self.state_dir, kind, **fields)

    # --- reading -------------------------------------------------------------------------------

    def _record_of(self, oid: str, timeout: float) -> RemoteRecord | None:
        if oid in self._records:
            return self._records[oid]
        raw = lockref.read_record(self.cwd, oid, MAX_RECORD_BYTES)
        if raw is None:
            lockref.fetch_ref_objects(self.cwd, self.remote, REF, timeout=timeout)
            raw = lockref.read_record(self.cwd, oid, MAX_RECORD_BYTES)
            if raw is None and lockref.has_object(self.cwd, oid):
                # Fetched, yet no record file in it (a commit without owner.json, a blob, a folder by
                # that name): not michi's, whatever pushed it; not a ref that keeps moving.
                raise errors.RemoteRecordCorrupt.at(
                    self.remote, oid, f"it holds no {lockref.RECORD_FILE} file"
                )
            if raw is None:
                return None  # the ref moved on between ls-remote and fetch
        try:
            record = RemoteRecord.loads(raw)
        except CorruptRemoteRecord as exc:
            raise errors.RemoteRecordCorrupt.at(self.remote, oid, str(exc)) from None
        self._records[oid] = record
        return record

    def read(self, timeout: float = NET_TIMEOUT) -> View:
        for _ in range(READ_TRIES):
            oid = lockref.remote_oid(self.cwd, self.remote, REF, timeout=timeout)
            if oid is None:
                return View(None, None, 0.0)
            record = self._record_of(oid, timeout)
            if record is not None:
                seen = self.sightings.unchanged_for(oid) if record.held else 0.0
                return View(oid, record, seen)
        raise RemoteUnreachable(
            f"the remote lock on {self.remote!r} kept moving while being read",
            hint="retry; if it persists, something rewrites the lock ref in a loop",
        )

    # --- writing -------------------------------------------------------------------------------

    def _swap(self, record: RemoteRecord, expected: str | None, timeout: float = NET_TIMEOUT) -> bool:
        new = lockref.write_record(self.cwd, self.common_dir, record.dumps(), record.message())
        started = clock()
        self.attempts[new] = started
        if not lockref.cas_push(self.cwd, self.remote, REF, new, expected, timeout=timeout).ok:
            return False
        self.record, self.oid, self.last_ok = record, new, started
        self._records[new] = record
        if record.held:  # our own record, seen from now on (and `michi status` knows the clone uses it)
            self.sightings.unchanged_for(new)
        return True

    def acquire(self, wait: float) -> RemoteRecord:
        """Take the lock, waiting up to `wait` seconds (0 = one try); raises `lock_busy` when it runs out."""
        lockref.one_push_url(self.cwd, self.remote)  # one repository, or "exactly one wins" means nothing
        start = clock()
        deadline, delay, contended, takeover = start + wait, FIRST_POLL, False, None
        while True:
            view = self.read()
            if not view.held or view.expired:
                base = view.record.fence if view.record is not None else 0
                mine = RemoteRecord.new(
                    fence=base + 1, ttl=self.ttl, command=self.command, agent=self.agent, pid=self.pid
                )
                try:
                    won = self._swap(mine, view.oid)
                except BaseException:
                    self._undo(mine)
                    raise
                if won:
                    takeover = "expired" if view.held else None
                    self.acquired_at = clock()
                    self.stats = {
                        "remote": self.remote,
                        "wait": round(self.acquired_at - start, 6),
                        "contended": contended,
                        "takeover": takeover,
                        "fence": mine.fence,
                    }
                    return mine
                contended = True  # another clone's swap won: re-read at once, it may be free again
                time.sleep(random.uniform(0, FIRST_POLL))
                continue
            contended = True
            now = clock()
            if now >= deadline:
                self._log("timeout", remote=self.remote, wait=round(now - start, 6))
                raise errors.busy(self.remote, view.record, now - start, view.unchanged_for)
            if self.on_wait is not None:
                self.on_wait(view.record, now - start)
            until_expiry = view.record.ttl - view.unchanged_for if view.record else MAX_POLL
            nap = min(random.uniform(delay / 2, delay), deadline - now, max(until_expiry, 0.0) + 0.01)
            time.sleep(max(nap, 0.0))
            delay = min(delay * 1.6, MAX_POLL)

    def _undo(self, mine: RemoteRecord) -> None:
        """Interrupted or cut off mid-swap: the push may have landed. If it did, release at once rather
        than leave a lock nobody renews to block everyone for a TTL. Best effort, briefly."""
        with contextlib.suppress(Exception):
            view = self.read(timeout=UNDO_TIMEOUT)
            if view.held and view.record is not None and view.record.token == mine.token:
                self.record, self.oid = view.record, view.oid
                self.release(timeout=UNDO_TIMEOUT)
        self.record = None

    def _adopt(self, view: View) -> bool:
        """After a failed swap: did an earlier push of ours land after all (a timeout, a broken link)?"""
        mine = self.record
        if mine is None or view.record is None or view.record.token != mine.token or view.oid is None:
            return False
        self.oid, self.record = view.oid, view.record
        self.last_ok = self.attempts.get(view.oid, self.last_ok)
        return True

    def renew(self, timeout: float = NET_TIMEOUT) -> None:
        """Write a fresh record (a new commit: observers restart their stopwatch); `lock_lost` if the
        record is no longer ours."""
        assert self.record is not None
        for _ in range(READ_TRIES):
            if self._swap(self.record.renewed_now(self.ttl), self.oid, timeout):
                return
            view = self.read(timeout)
            if not (self._adopt(view) and view.held):
                raise errors.lost(self.remote, f"taken over by {errors.describe(view.record)}", view.record)
        raise errors.lost(self.remote, "the lock ref keeps moving")

    def release(self, timeout: float = NET_TIMEOUT) -> None:
        """Swap our record for a free one carrying the same fence (the next holder gets fence + 1)."""
        if self.record is None:
            return
        for _ in range(READ_TRIES):
            if self._swap(self.record.released(), self.oid, timeout):
                break
            view = self.read(timeout)
            if not self._adopt(view):
                self.record = None
                raise errors.lost(self.remote, f"taken over by {errors.describe(view.record)}", view.record)
            if not view.held:
                break  # an earlier release of ours landed
        released, self.record = self.record, None
        if self.acquired_at:  # acquired by this process: one event for the whole hold
            self._log("hold", hold=round(clock() - self.acquired_at, 6), **self.stats)
        else:  # a script's lock, taken by another michi process: its hold by the holder's wall clock
            hold = round(max(0.0, time.time() - released.created_ts), 6) if released else None
            self._log("release", remote=self.remote, hold=hold)

    def detach(self) -> str:
        """Leave the lock held for a script (`lock acquire --remote`); it renews and releases by token."""
        assert self.record is not None
        self._log("acquire", **self.stats)
        return self.record.token

    def replace_corrupt(self, oid: str) -> int:
        """Swap an unreadable record (not michi's) for a free one; its fence, if any can be read, is kept
        so fences still rise (`release --force --yes`). Returns that fence."""
        fence = 0
        with contextlib.suppress(CorruptRemoteRecord, ValueError, TypeError):
            data = decode(lockref.read_record(self.cwd, oid, MAX_RECORD_BYTES) or b"{}")
            fence = max(0, int(data["fence"])) if isinstance(data, dict) and "fence" in data else 0
        free = RemoteRecord.new(fence=fence, ttl=self.ttl, command=self.command, agent=self.agent).released()
        if not self._swap(free, oid):
            raise errors.lost(self.remote, "the record changed while it was being replaced")
        self.record = None
        return fence

    def attach(self, view: View) -> None:
        """Act as the holder of the record `view` shows (a script's `renew` / `release` by token)."""
        self.record, self.oid, self.last_ok = view.record, view.oid, clock()
