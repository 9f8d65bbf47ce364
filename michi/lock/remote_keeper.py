"""What a remote lock's holder does while its command runs (ADR 0009): renew every TTL/3, and give up
the lock *before* anyone else may judge it expired.

Observers take over once the record has stayed unchanged for its TTL on their stopwatch, which starts
no earlier than our last renewal landed, which is no earlier than that push started. So the holder
measures its lease from the start of its last push that landed, on its own stopwatch: if it has not
renewed by LAPSE x TTL (the remote down, refused, or this process paused), the lease is treated as
lost and the command is stopped with STOP_GRACE left before anyone may take over.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from michi.durations import as_given
from michi.errors import GitFailed, LockError, MichiError
from michi.lock import remote_errors as errors
from michi.lock.record import boot_clock as clock
from michi.lock.remote import RemoteLock

RENEW_EVERY = 1 / 3  # of the TTL
LAPSE = 0.75  # of the TTL: no renewal landed for this long -> stop the command
STOP_GRACE = 0.15  # of the TTL: SIGTERM to SIGKILL, so the command is gone by 0.9 x TTL
RETRY = 1 / 12  # of the TTL: how soon a failed renewal is tried again (at most every 2 s)


class RemoteKeeper(threading.Thread):
    def __init__(self, lock: RemoteLock, *, on_lost: Callable[[], None]) -> None:
        super().__init__(daemon=True, name="michi-remote-lock-keeper")
        self.lock, self.on_lost = lock, on_lost
        self.ttl = lock.ttl
        self.stopped = threading.Event()
        self.lost: LockError | None = None
        self.last_error: MichiError | None = None

    def _lapse_at(self) -> float:
        assert self.lock.last_ok is not None
        return self.lock.last_ok + LAPSE * self.ttl

    def run(self) -> None:
        assert self.lock.last_ok is not None
        next_renew = self.lock.last_ok + RENEW_EVERY * self.ttl
        tick = min(0.25, self.ttl * RETRY / 2)
        while not self.stopped.wait(tick):
            now = clock()
            if now >= self._lapse_at():  # also after a pause: the clock jumped past the lease
                since = now - (self.lock.last_ok or now)
                why = f"no renewal landed for {since:.1f}s of its {as_given(self.ttl)}s lease"
                if self.last_error is not None:
                    why += f" ({self.last_error.message})"
                self._give_up(errors.lost(self.lock.remote, why))
                return
            if now < next_renew:
                continue
            try:
                self.lock.renew(timeout=max(0.5, self._lapse_at() - now))
                self.last_error = None
                next_renew = (self.lock.last_ok or now) + RENEW_EVERY * self.ttl
            except LockError as exc:  # taken over: someone else holds it now
                self._give_up(exc)
                return
            except GitFailed as exc:  # unreachable or refusing: retry until the lease would lapse
                self.last_error = exc
                next_renew = clock() + min(2.0, RETRY * self.ttl)

    def _give_up(self, exc: LockError) -> None:
        self.lost = exc  # the record stays: a later release is a swap on *our* commit, safe either way
        self.on_lost()

    def stop(self) -> None:
        self.stopped.set()
        if self.is_alive() and threading.current_thread() is not self:
            self.join()
