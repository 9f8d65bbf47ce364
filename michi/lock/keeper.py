"""What a holder does while it works: renew the lease every TTL/3, notice waiters, turn SIGTERM into an
exception in the main thread so `finally` blocks run and the lock is released (ADR 0003)."""

from __future__ import annotations

import contextlib
import signal
import threading
import time
from collections.abc import Callable, Iterator
from types import FrameType

from michi.lock.errors import LockLost, LockPathInvalid, terminated_by

WAITER_CHECK = 0.25  # how often a holder looks for waiters to call its release-requested handler


class Keeper(threading.Thread):
    def __init__(
        self,
        *,
        ttl: float,
        renew: Callable[[], None],
        has_waiters: Callable[[], bool],
        on_waiters: Callable[[], None] | None,
        on_lost: Callable[[], None] | None,
    ) -> None:
        super().__init__(daemon=True, name="michi-lock-keeper")
        self.renew_every = ttl / 3 if ttl > 0 else None
        self._renew, self._has_waiters = renew, has_waiters
        self.on_waiters, self.on_lost = on_waiters, on_lost
        self.stopped = threading.Event()
        self.lost = False

    def run(self) -> None:
        tick = min(WAITER_CHECK, self.renew_every or WAITER_CHECK)
        # Measured, not counted in ticks: after a pause (SIGSTOP, suspend) the first tick renews at once,
        # so a lease lost meanwhile is noticed (and `lock run`'s command stopped) without delay.
        renewed = time.monotonic()
        while not self.stopped.wait(tick):
            if self.renew_every is not None and time.monotonic() - renewed >= self.renew_every:
                renewed = time.monotonic()
                try:
                    self._renew()
                except LockLost:
                    self.lost = True
                    if self.on_lost is not None:
                        self.on_lost()
                    return
                except OSError:
                    pass  # a transient file-system error: the next tick retries well within the lease
            if self.on_waiters is not None and self._waiting():
                handler, self.on_waiters = self.on_waiters, None  # once per hold (seed 003)
                handler()

    def _waiting(self) -> bool:
        try:
            return self._has_waiters()
        except (OSError, LockPathInvalid):  # the queue's folder spoiled mid-hold: nobody can queue there
            return False

    def stop(self) -> None:
        self.stopped.set()
        if self.is_alive() and threading.current_thread() is not self:
            self.join()


# A hang-up (the terminal or ssh session closing, `kill -HUP`) ends michi as SIGTERM does: by default it
# killed the process outright, leaving a dead holder's lock and, for `lock run`, nobody to stop the command.
ENDING = (signal.SIGTERM, signal.SIGHUP)


def _raise_terminated(signum: int, frame: FrameType | None) -> None:
    # No "the repo lock was released": a command still waiting for the lock never held it (finally-blocks
    # release it when held).
    raise terminated_by(signum)


@contextlib.contextmanager
def sigterm_raises() -> Iterator[None]:
    """SIGTERM and SIGHUP raise `Terminated`, so finally-blocks stop what runs and release the lock. Only
    from the main thread, and only for a signal whose handling nobody else chose."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {sig: signal.getsignal(sig) for sig in ENDING}
    ours = [sig for sig, handler in previous.items() if handler is signal.SIG_DFL]
    for sig in ours:
        signal.signal(sig, _raise_terminated)
    try:
        yield
    finally:
        for sig in ours:
            if signal.getsignal(sig) is _raise_terminated:  # else a push that landed holds it (ADR 0004)
                signal.signal(sig, previous[sig])
