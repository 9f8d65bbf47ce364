"""Spinners for people at a terminal while michi waits (never in --json mode, never for agents).

`spinner(session)` is generic: it yields an `update(text)` callable, or None when nobody is watching.
`lock_waiter(session)` builds the `on_wait` callback the repo lock calls while it waits.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

from michi import threads
from michi.lock.record import Owner
from michi.session import Session

QUIET_FOR = 0.3  # seconds before a spinner appears: short waits should not flicker


@contextlib.contextmanager
def spinner(session: Session) -> Iterator[Callable[[str], None] | None]:
    if not session.interactive:
        yield None
        return
    status: Any = None

    def update(text: str) -> None:
        nonlocal status
        if status is None:
            from rich.console import Console

            status = Console(stderr=True, highlight=False).status(text)
            with threads.held_back():  # it starts a thread (michi.threads)
                status.start()
        else:
            status.update(text)

    try:
        yield update
    finally:
        if status is not None:
            status.stop()


def describe_wait(holder: Owner | None, waited: float) -> str:
    if holder is None:
        return f"waiting for the repo lock ({waited:.0f}s)"
    who = f"PID {holder.pid}" + (f", agent {holder.agent}" if holder.agent else "")
    import time

    held_for = max(0.0, time.time() - holder.created_ts)
    return (
        f"waiting for the repo lock ({waited:.0f}s): {who} is running {holder.command!r} for {held_for:.0f}s"
    )


@contextlib.contextmanager
def lock_waiter(session: Session) -> Iterator[Callable[[Owner | None, float], None] | None]:
    with spinner(session) as update:
        if update is None:
            yield None
            return
        shown = update

        def on_wait(holder: Owner | None, waited: float) -> None:
            if waited >= QUIET_FOR:
                shown(describe_wait(holder, waited))

        yield on_wait
