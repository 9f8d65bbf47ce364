"""An in-memory lock with the real one's interface and errors, for unit tests of code above the lock."""

from __future__ import annotations

import contextlib
import secrets
import threading
from collections.abc import Callable, Iterator

from michi.lock.errors import LockContention, LockLost, LockTimeout
from michi.lock.interface import LockInterface


class FakeLock(LockInterface):
    """Instances sharing one `FakeLock.Slot` exclude each other (threads may wait on it).

    `steal()` simulates a takeover after a lost lease; `waiting` simulates a waiter for handoff tests.
    """

    class Slot:
        def __init__(self) -> None:
            self.token: str | None = None
            self.cond = threading.Condition()
            self.waiting = 0

    def __init__(self, slot: Slot | None = None) -> None:
        self.slot = slot if slot is not None else FakeLock.Slot()
        self._token: str | None = None
        self._handler: Callable[[], None] | None = None
        self._signalled = False
        self.renewals = 0

    @property
    def token(self) -> str | None:
        return self._token

    def acquire(self, timeout: float) -> None:
        if self._token is not None:
            raise RuntimeError("this FakeLock is already held; release it first")
        with self.slot.cond:
            if self.slot.token is not None and timeout <= 0:
                raise LockContention("the repo lock is held (fake)", hint="retry")
            self.slot.waiting += 1
            try:
                if not self.slot.cond.wait_for(lambda: self.slot.token is None, timeout):
                    raise LockTimeout("the repo lock is held (fake)", hint="retry", waited=timeout)
            finally:
                self.slot.waiting -= 1
            self._token = self.slot.token = secrets.token_hex(8)
            self._signalled = False

    def release(self) -> None:
        with self.slot.cond:
            if self._token is not None and self.slot.token == self._token:
                self.slot.token = None
                self.slot.cond.notify_all()
            self._token = None

    def renew(self) -> None:
        self.ensure_held()
        self.renewals += 1
        if self.slot.waiting and self._handler is not None and not self._signalled:
            self._signalled = True
            self._handler()

    def ensure_held(self) -> None:
        if self._token is None or self.slot.token != self._token:
            raise LockLost("lost the repo lock (fake)", hint="run the command again")

    def on_release_requested(self, handler: Callable[[], None]) -> None:
        self._handler = handler

    def steal(self) -> None:
        """Another process takes the lock over, as after an expired lease."""
        with self.slot.cond:
            self.slot.token = secrets.token_hex(8)

    @contextlib.contextmanager
    def held(self, timeout: float) -> Iterator[FakeLock]:
        self.acquire(timeout)
        try:
            yield self
        finally:
            self.release()
