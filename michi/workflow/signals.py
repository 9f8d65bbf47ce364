"""Holding Ctrl-C and SIGTERM while a push is under way, and after it landed (ADR 0004); and while the
lock's holder lands a waiter's operation it took (ADR 0017). SIGTERM and SIGHUP end a command as Ctrl-C
does from its start (`ending_as_ctrl_c`); from a transaction's start they raise `Terminated` (`resume`)."""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

DEFERRED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)  # a closing terminal must not cut a push either
ENDING = (signal.SIGTERM, signal.SIGHUP)

# The handlers as the command's transaction found them (`resume`), put back once what a landed push held
# is settled (`settle`, `resume`); whether that hold is on, and what came meanwhile.
_Handlers = dict[signal.Signals, Any]
_base: _Handlers = {}
_holding = False
_came: list[int] = []
# SIGTERM and SIGHUP raising `Terminated` from a transaction's start (`resume`) to the command's end
# (`settle`): before the lock too, not only while it is awaited or held (`michi.lock.keeper`).
_ending = contextlib.ExitStack()


class Ended(KeyboardInterrupt):
    """SIGTERM or SIGHUP outside a transaction (`ending_as_ctrl_c`), raised as Ctrl-C's KeyboardInterrupt
    is: it stops the command wherever it is, and no `except Exception` of a read's best-effort step
    swallows it, as it would `Terminated` (a MichiError)."""


_ended: list[int] = []  # the signals `Ended` was raised for in this command
_over: list[bool] = []  # the command's answer is out (`answered`)


def _raise_ended(signum: int, _frame: FrameType | None) -> None:
    if _over:  # too late to stop anything: the command ends with the status it answered
        return
    _ended.append(signum)
    raise Ended(signum)


def answered() -> None:
    """The command has printed its one answer (`michi.cli.main`): a SIGTERM or SIGHUP from now on must
    not raise `Ended` in its clean-up, where it escaped as a traceback (or, served, as a second
    `--json` document)."""
    _over.append(True)


def ended_by() -> int | None:
    """The SIGTERM or SIGHUP that ended this command as Ctrl-C does, if one did."""
    return _ended[0] if _ended else None


@contextmanager
def ending_as_ctrl_c() -> Iterator[None]:
    """The whole command (`michi.cli.main`): SIGTERM and SIGHUP end it as Ctrl-C does (130, `terminated`).
    By default they killed michi (exit 143 or 129, no `--json` answer) in the reads and parsing before a
    transaction started, where a moment later the same signal gave 130. Not a signal someone else chose
    the handling of (`nohup`), and put back before the process's end (`michi.serve.client.finish`),
    where a signal ends it by the default action again: a served command's worker answers its exit."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    _ended.clear()
    _over.clear()
    ours = [sig for sig in ENDING if signal.getsignal(sig) is signal.SIG_DFL]
    for sig in ours:
        signal.signal(sig, _raise_ended)
    try:
        yield
    finally:
        for sig in ours:
            if signal.getsignal(sig) is _raise_ended:
                signal.signal(sig, signal.SIG_DFL)


@contextmanager
def terminating() -> Iterator[None]:
    """SIGTERM and SIGHUP raise `Terminated` inside (`michi.lock.keeper.sigterm_raises`), also where the
    command has them raise `Ended` (`ending_as_ctrl_c`): a transaction's and `lock run`'s code cleans up
    on `Terminated` as on any error; `Ended` is put back on leaving."""
    from michi.lock.keeper import sigterm_raises
    from michi.threads import held_back

    ours = [sig for sig in ENDING if signal.getsignal(sig) is _raise_ended]
    mask: list[set[int | signal.Signals]] = []
    # Held back while one handler takes over from the other, both ways: no moment with the default action.
    with contextlib.ExitStack() as stack:
        with held_back():
            for sig in ours:
                signal.signal(sig, signal.SIG_DFL)
            stack.callback(lambda: mask and signal.pthread_sigmask(signal.SIG_SETMASK, mask.pop()))
            stack.callback(_put_back, ours)
            stack.enter_context(sigterm_raises())
            stack.callback(lambda: mask.append(signal.pthread_sigmask(signal.SIG_BLOCK, ENDING)))
        yield


def _put_back(ours: list[signal.Signals]) -> None:
    for sig in ours:
        if signal.getsignal(sig) is signal.SIG_DFL:  # else a push that landed holds it (ADR 0004)
            signal.signal(sig, _raise_ended)


@contextmanager
def interruptions_deferred(done: Callable[[], bool]) -> Iterator[None]:
    """Ctrl-C or SIGTERM during the push and the steps after it is acted on afterwards, so a push is never
    left half-known. Once `done()` (the push landed) the change is made: what comes from then on is held
    too, until the command has said so (`settle`: the command ended, the signal is dropped, as the README
    promises) or its next transaction starts (`resume`: the signal is acted on there, before that one
    changes anything: an import stops between its chunks). A Ctrl-C just after the push must not make a
    command whose change landed say "interrupted, run the command again". Python runs signal handlers in
    the main thread whichever thread the signal hit, so recording it in a handler covers the lock's renewal
    thread too; git itself runs in its own session (see git.push)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[int] = []
    previous = {sig: signal.signal(sig, lambda signum, _frame: caught.append(signum)) for sig in DEFERRED}
    try:
        yield
    except BaseException:
        _restore(previous)
        raise
    if not done():
        _restore(previous)
        if caught:
            signal.raise_signal(caught[0])
        return
    _hold(previous, [])


def _hold(previous: _Handlers, came: list[int]) -> None:
    """From now on what comes is held (`held`) until `settle` drops it or `resume` acts on it."""
    global _holding
    if not _holding:
        for sig, handler in previous.items():
            _base.setdefault(sig, handler)  # (a transaction's start has set them: `resume`)
        _came[:] = []
    _holding = True
    _came.extend(came)
    for sig in DEFERRED:
        signal.signal(sig, held)


@contextmanager
def offered(taken: Callable[[], bool]) -> Iterator[None]:
    """While a command's operation is offered to the lock's holder (ADR 0017). A signal that comes before
    a holder took it is acted on as before it was offered (Ctrl-C: the offer is withdrawn, exit 130,
    nothing done). Once `taken()`, the operation lands whatever the waiter does, so what comes is held
    until the command has answered with its outcome (the holder's answer, or what the waiter found
    itself after that holder died), as after a push that landed: a Ctrl-C must not make a command
    whose change lands say "interrupted". If the command fails (the holder refused its operation), what
    was held is dropped: the command answers that refusal. SIGTERM and SIGHUP raise `Terminated` as
    they do while the lock is awaited or held (`michi.lock.keeper.sigterm_raises`)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    from michi.lock.keeper import sigterm_raises

    caught: list[int] = []

    def on_signal(signum: int, frame: FrameType | None) -> None:
        if caught or taken():
            caught.append(signum)
            return
        handler = previous[signal.Signals(signum)]
        if callable(handler):
            handler(signum, frame)  # Ctrl-C's KeyboardInterrupt, SIGTERM's `Terminated`
        elif handler == signal.SIG_DFL:
            signal.signal(signum, handler)
            signal.raise_signal(signum)

    outer = {sig: signal.getsignal(sig) for sig in DEFERRED}
    with sigterm_raises():
        previous = {sig: signal.getsignal(sig) for sig in DEFERRED}
        for sig in DEFERRED:
            signal.signal(sig, on_signal)
        try:
            yield
        except BaseException:
            _restore_from(on_signal, previous)
            raise
        if taken():
            _hold(outer, caught)  # in place of `on_signal` at once: nothing comes between
        else:
            _restore_from(on_signal, previous)


def _restore_from(ours: Callable[..., None], previous: _Handlers) -> None:
    for sig in DEFERRED:
        if signal.getsignal(sig) is ours:  # else a push that landed holds it already
            signal.signal(sig, previous[sig])


def held(signum: int, _frame: FrameType | None) -> None:
    """The handler while a command whose change landed (or lands: ADR 0017) goes on: what comes is noted,
    not acted on. Whoever set a handler before it leaves this one in place as it ends
    (`michi.lock.keeper.sigterm_raises`)."""
    _came.append(signum)


def _restore(previous: _Handlers) -> None:
    for sig, handler in previous.items():
        signal.signal(sig, handler)


def resume() -> None:
    """A transaction starts: a signal held since the last one landed is acted on now, before anything
    of this one is done; the handlers as found here are the ones put back later. From here on SIGTERM
    and SIGHUP raise `Terminated`, as while the lock is awaited or held, unless someone else chose their
    handling (`nohup`): one that came before the lock (building the commit, the fetch without the lock)
    killed michi, exit 143 with no `--json` answer, where Ctrl-C gave 130 and `interrupted` (ADR 0004)."""
    global _holding
    if threading.current_thread() is not threading.main_thread():
        return
    came = _came[0] if _holding and _came else None
    if _holding:
        _holding = False
        _restore(_base)
    _ending.close()  # the handlers as they were before this command's transactions changed them
    _base.update({sig: signal.getsignal(sig) for sig in DEFERRED})
    _ending.enter_context(terminating())
    if came is not None:
        signal.raise_signal(came)


def settle() -> None:
    """The command ended: a signal held since its change landed is dropped (the change is made, and the
    command says so), and the handlers are as its transaction found them."""
    global _holding
    if threading.current_thread() is not threading.main_thread():
        return
    if _holding:
        _holding = False
        _came[:] = []
        _restore(_base)
    _ending.close()
