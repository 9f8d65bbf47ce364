"""The holder's keeper (michi.lock.keeper): `stop` waits for a renewal under way, and the keeper is silent
once `stop` returned."""

from __future__ import annotations

import threading

from michi.lock.keeper import Keeper


def test_stop_waits_for_a_renewal_under_way_and_nothing_runs_after_it() -> None:
    entered, release = threading.Event(), threading.Event()
    calls: list[str] = []

    def renew() -> None:
        calls.append("renew")
        entered.set()
        release.wait(30)
        calls.append("renewed")

    keeper = Keeper(ttl=0.003, renew=renew, has_waiters=lambda: False, on_waiters=None, on_lost=None)
    keeper.start()
    assert entered.wait(30), "the keeper never renewed"
    stopped = threading.Event()
    stopper = threading.Thread(target=lambda: (keeper.stop(), stopped.set()))
    stopper.start()
    assert not stopped.wait(0.2)  # a renewal is under way: stop must not return before it ends
    release.set()
    stopper.join(30)
    assert stopped.is_set()
    assert calls == ["renew", "renewed"]
    after = list(calls)
    threading.Event().wait(0.05)  # several ticks: none of them may renew now
    assert calls == after


def test_waiters_are_told_once_and_a_stopped_keeper_tells_nobody() -> None:
    told = threading.Event()
    count: list[int] = []

    def handler() -> None:
        count.append(1)
        told.set()

    keeper = Keeper(ttl=0, renew=lambda: None, has_waiters=lambda: True, on_waiters=handler, on_lost=None)
    keeper.start()
    assert told.wait(30)
    keeper.stop()
    assert count == [1]
    quiet = Keeper(ttl=0, renew=lambda: None, has_waiters=lambda: True, on_waiters=handler, on_lost=None)
    quiet.start()
    quiet.stop()  # before its first tick (0.25 s)
    threading.Event().wait(0.4)
    assert count == [1]
