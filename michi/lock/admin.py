"""Operations on the lock by someone other than an in-process holder: `michi lock status`, a script's
`release --token` / `renew --token`, and `release --force`. All changes go through the guard (fs.py)."""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

from michi.lock import events, fs, lost, procs
from michi.lock.errors import HoldLost, LockLive, LockNotOwned, describe, holder_details
from michi.lock.queue import Queue
from michi.lock.record import Judgement, Owner, lease_left
from michi.lock.record import write_owner as publish
from michi.lock.repolock import QUEUE_DIR, peek
from michi.repo import RepoPaths


@dataclass(frozen=True)
class LockState:
    path: str
    held: bool
    owner: Owner | None
    stale: bool
    reason: str | None  # record.Judgement reasons; None when free
    waiters: list[int]
    checked: float
    orphans: tuple[int, ...] = ()  # a dead holder's command still running in its process group
    last_fence: int = 0  # the repository's latest fence (the holder's, unless the lock is free)

    def to_json(self) -> dict[str, Any]:
        owner = self.owner
        left = lease_left(owner, self.checked) if owner else None
        return {
            "lock": self.path,
            "held": self.held,
            "stale": self.stale,
            "reason": self.reason,
            **holder_details(owner, self.checked),
            "time_left": None if left is None else round(left, 3),
            "token_prefix": owner.token[:8] if owner else None,
            "fence": owner.fence if owner else None,
            "last_fence": self.last_fence,
            "orphans": list(self.orphans),
            "waiters": self.waiters,
        }


def state(repo: RepoPaths) -> LockState:
    held = fs.check_lock_path(repo.lock_dir)
    owner, verdict = peek(repo.lock_dir) if held else (None, Judgement(False, "free"))
    waiters = Queue(repo.state_dir / QUEUE_DIR).waiters()
    reason = verdict.reason if held else None
    fence = _last_fence(repo)
    return LockState(
        str(repo.lock_dir), held, owner, verdict.stale, reason, waiters, time.time(), verdict.orphans, fence
    )


def _last_fence(repo: RepoPaths) -> int:
    return fs.fence_at(repo.state_dir / fs.GUARD_FILE)


def _guard_fd(repo: RepoPaths) -> int:
    fs.ensure_dir(repo.state_dir)
    return fs.open_flock_file(repo.state_dir / fs.GUARD_FILE)


def _not_owned(owner: Owner | None, token: str) -> LockNotOwned:
    holder = describe(owner, time.time()) if owner else "nobody"
    return LockNotOwned(
        f"the repo lock is not held with token {token[:8]}...; it is held by {holder}",
        hint="pass the token `michi lock acquire` printed (or MICHI_LOCK_TOKEN)",
    )


def _taken_from(repo: RepoPaths, token: str | None, owner: Owner | None) -> None:
    """A script releasing or renewing a lock that was taken from it must learn so (exit 4, lock_lost)."""
    if token is None or (owner is not None and owner.token == token):
        return
    if lost.ending(repo.state_dir, token) is None:
        return
    message, details = lost.explain(repo.state_dir, token, None, owner, None, 0)
    raise HoldLost(
        message,
        hint="whatever ran after that was not serialized by the lock; check its results, then take the lock "
        "again (a longer --ttl, or `michi lock renew`, keeps a long script's lease)",
        **details,
    )


@contextlib.contextmanager
def _guarded(repo: RepoPaths, fd: int) -> Iterator[None]:
    """The guard, for `fs.GUARD_WAIT` seconds at most: a process stopped inside it holds it until resumed."""
    start = time.monotonic()
    try:
        with fs.guarded(fd, fs.GUARD_WAIT):
            yield
    except fs.GuardBusy:
        raise fs.stuck(fd, time.monotonic() - start, str(repo.lock_dir)) from None


Process = tuple[int, int | None]  # (PID, start ticks): who asks, as `procs.script_chain` names a holder


def _inner(owner: Owner, caller: Process | None) -> tuple[Process, ...] | None:
    """When `caller` works under `owner`'s hold rather than holding it: the record's nested holders
    without `caller`'s entry (it took the lock again with the holder's token, ADR 0003); those unchanged
    for a `lock run` hold, which only its `lock run` releases (its token is handed to its command alone);
    None when the hold is the caller's to end."""
    live = tuple(p for p in owner.nested if procs.alive(*p))
    if caller is not None and caller in live:
        i = live.index(caller)
        return live[:i] + live[i + 1 :]
    return live if owner.pgid is not None else None


@contextlib.contextmanager
def _held_with(repo: RepoPaths, token: str) -> Iterator[Owner]:
    """The record of the lock held with `token`, under the guard; LockNotOwned when it is not."""
    fd = _guard_fd(repo)
    try:
        with _guarded(repo, fd):
            owner = peek(repo.lock_dir)[0] if fs.check_lock_path(repo.lock_dir) else None
            if owner is None or owner.token != token:
                _taken_from(repo, token, owner)
                raise _not_owned(owner, token)
            yield owner
    finally:
        os.close(fd)


def nest(repo: RepoPaths, *, token: str, caller: Process) -> Owner:
    """Record `caller` as a nested holder of the lock held with `token` (`michi lock acquire` under an
    inherited token): its release then ends its own hold only, never its holder's."""
    with _held_with(repo, token) as owner:
        live = tuple(p for p in owner.nested if procs.alive(*p))
        owner = replace(owner, nested=(*live, caller))
        publish(repo.lock_dir, owner)
        return owner


def release(
    repo: RepoPaths, *, token: str | None, force: bool, yes: bool, caller: Process | None = None
) -> tuple[Owner | None, str]:
    """Remove the lock if `token` is its token, or (force) if it is stale, or (force + yes) anyway.
    Returns the removed holder (None if the lock was free) and why it was removed. A dead `lock run`
    holder's leftover processes are ended first (the reason then says so). A `caller` working under
    the hold (`_inner`) removes nothing: the reason is "inner"."""
    if force and fs.check_lock_path(repo.lock_dir):
        owner, verdict = peek(repo.lock_dir)
        if verdict.orphans and owner is not None and owner.pgid:
            procs.end_members(owner.pgid, owner.pgid_ticks)
    fd = _guard_fd(repo)
    try:
        with _guarded(repo, fd):
            if not fs.check_lock_path(repo.lock_dir):
                _taken_from(repo, token, None)
                return None, "free"
            owner, verdict = peek(repo.lock_dir)
            inner = None if owner is None or (force and yes) else _inner(owner, caller)
            if token is not None and owner is not None and owner.token == token and inner is not None:
                if inner != owner.nested:
                    publish(repo.lock_dir, replace(owner, nested=inner))
                return owner, "inner"
            if token is not None and owner is not None and owner.token == token:
                why = "token"
            elif force and (verdict.stale or yes):
                why = "stale:" + verdict.reason if verdict.stale else "forced"
            elif force:
                raise LockLive(
                    f"the repo lock is live: held by {describe(owner, time.time())}",
                    hint="removing a live lock lets two processes work at once; add --yes if you are sure",
                    **holder_details(owner, time.time()),
                )
            else:
                _taken_from(repo, token, owner)
                raise _not_owned(owner, token or "")
            fs.remove_lock_dir(repo.lock_dir)
            hold = round(time.time() - owner.created_ts, 6) if owner else None
            ended = lost.token_hash(owner.token) if owner else None
            events.append(repo.state_dir, "release", hold=hold, why=why, token=ended, by_pid=os.getppid())
    finally:
        os.close(fd)
    return owner, why


def renew(repo: RepoPaths, *, token: str, ttl: float, caller: Process | None = None) -> Owner:
    """Extend the lease held with `token` to `ttl` from now; a `caller` working under the hold (`_inner`)
    never shortens it: a nested `renew --ttl 1` once cut a running `lock run`'s lease to a second."""
    with _held_with(repo, token) as owner:
        renewed = owner.renewed(ttl, never_shorter=_inner(owner, caller) is not None)
        publish(repo.lock_dir, renewed)
        return renewed
