"""FakeLock behaves like RepoLock where code above the lock can tell (seed 003)."""

from __future__ import annotations

import threading

import pytest

from michi.lock import FakeLock, LockContention, LockLost, LockTimeout


def test_exclusion_timeout_and_contention() -> None:
    slot = FakeLock.Slot()
    first, second = FakeLock(slot), FakeLock(slot)
    first.acquire(0)
    with pytest.raises(LockContention):
        second.acquire(0)
    with pytest.raises(LockTimeout):
        second.acquire(0.05)
    first.release()
    first.release()  # idempotent
    second.acquire(0)
    assert second.token is not None and first.token is None


def test_waiter_gets_it_on_release_and_holder_is_asked() -> None:
    slot = FakeLock.Slot()
    holder, waiter = FakeLock(slot), FakeLock(slot)
    asked: list[int] = []
    holder.on_release_requested(lambda: asked.append(1))
    holder.acquire(0)
    thread = threading.Thread(target=waiter.acquire, args=(5,))
    thread.start()
    while not slot.waiting:
        threading.Event().wait(0.001)
    holder.renew()
    holder.renew()
    assert asked == [1]  # once per hold
    holder.release()
    thread.join(5)
    assert waiter.token is not None


def test_stolen_lock_is_lost() -> None:
    lock = FakeLock()
    with lock.held(0):
        lock.steal()
        with pytest.raises(LockLost):
            lock.ensure_held()
        with pytest.raises(LockLost):
            lock.renew()
