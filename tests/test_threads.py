"""Threads started where a signal raises an exception (michi.threads, ADR 0003): the ending signals are
held back while `threading` does its bookkeeping, and one that came meanwhile is raised right after, as
`Terminated`, with the thread fully started."""

from __future__ import annotations

import os
import signal
import threading

import pytest

from michi import threads
from michi.lock.errors import Terminated
from michi.lock.keeper import sigterm_raises


def test_a_thread_starts_with_the_ending_signals_held_back_and_the_caller_gets_its_mask_back() -> None:
    seen: list[set[signal.Signals]] = []
    before = signal.pthread_sigmask(signal.SIG_BLOCK, [])
    thread = threading.Thread(target=lambda: seen.append(signal.pthread_sigmask(signal.SIG_BLOCK, [])))
    threads.start(thread)
    thread.join(30)
    assert seen and seen[0] >= threads.HELD_BACK  # inherited: these reach the main thread, its handler
    assert signal.pthread_sigmask(signal.SIG_BLOCK, []) == before


def test_a_sigterm_sent_while_a_thread_starts_is_raised_after_the_start_as_terminated() -> None:
    go_on = threading.Event()

    def run() -> None:
        os.kill(os.getpid(), signal.SIGTERM)  # at once, while the caller may still be in `start`
        go_on.wait(30)

    thread = threading.Thread(target=run, daemon=True)
    with sigterm_raises(), pytest.raises(Terminated):
        threads.start(thread)
    go_on.set()
    thread.join(30)
    assert thread.ident is not None and not thread.is_alive()
