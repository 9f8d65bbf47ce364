"""Holding Ctrl-C and SIGTERM while a push is under way (ADR 0004)."""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

DEFERRED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)  # a closing terminal must not cut a push either


@contextmanager
def interruptions_deferred(done: Callable[[], bool]) -> Iterator[None]:
    """Ctrl-C or SIGTERM during the push and the steps after it is acted on afterwards, so a push is never
    left half-known; once `done()` (the push landed) it is dropped, because the operation is complete.
    Python runs signal handlers in the main thread whichever thread the signal hit, so recording it in a
    handler covers the lock's renewal thread too; git itself runs in its own session (see git.push)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[int] = []
    previous = {sig: signal.signal(sig, lambda signum, _frame: caught.append(signum)) for sig in DEFERRED}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        if caught and not done():
            signal.raise_signal(caught[0])
