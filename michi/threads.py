"""Starting a thread where a signal may raise an exception (ADR 0003).

`sigterm_raises` turns SIGTERM, SIGHUP (and Python turns SIGINT) into an exception in the main thread,
raised wherever that thread is. `threading.Thread.start` is not written for that: an exception between
handing the thread to the C runtime and its own bookkeeping surfaces as a `KeyError` of threading's
internals (michi then reported an "unexpected error", exit 1, instead of having been terminated). So a
thread is started with those signals held back; one that came meanwhile is raised right after, when the
thread is fully started and the caller's `finally` can stop it. The new thread inherits the mask, so
these signals are delivered to the main thread, whose handler is the one that acts on them.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator

# The signals michi turns into an exception: held back while a thread starts, or a process group
# (`michi.lock.group`) until the code that stops it is in place.
HELD_BACK = frozenset({signal.SIGTERM, signal.SIGINT, signal.SIGHUP})


@contextlib.contextmanager
def held_back() -> Iterator[None]:
    """The ending signals stay pending inside; one that came is raised on leaving."""
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, HELD_BACK)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)


def start(thread: threading.Thread) -> None:
    """`thread.start()`, with the ending signals held back until it has started."""
    with held_back():
        thread.start()
