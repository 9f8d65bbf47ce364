"""Operations on the lock by someone other than an in-process holder: `michi lock status`, a script's
`release --token` / `renew --token`, and `release --force`. All changes go through the guard (fs.py)."""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

from michi.errors import UsageError
from michi.lock import events, fs, lost, procs
from michi.lock.errors import HoldLost, LockLive, LockNotOwned, describe, holder_details
from michi.lock.queue import Queue
from michi.lock.record import Judgement, Nested, Owner, judge, lease_left
from michi.lock.record import write_owner as publish
from michi.lock.repolock import QUEUE_DIR, peek
from michi.repo import RepoPaths
from michi.unique import token_hex


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
    if token is None or (owner is not None and owner.admits(token)):
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
MAX_NESTED = 64  # live nested holds under one lock: each is a few lines of a record read on every look


def _is(process: Process, other: Process | None) -> bool:
    """The same process: the same PID and, where both are known, the same start ticks."""
    if other is None or process[0] != other[0]:
        return False
    return process[1] is None or other[1] is None or process[1] == other[1]


def _is_outer(owner: Owner, caller: Process) -> bool:
    """`caller` is the holder itself: its script, the script that named it with `--pid`, or a subshell."""
    ids = ((owner.pid, owner.pid_ticks), owner.by, *owner.forks)
    return any(_is(caller, known) for known in ids)


def _works_under(owner: Owner, token: str, caller: Process | None) -> tuple[bool, int | None]:
    """Whether a release or renewal with `token` by `caller` is made under `owner`'s hold rather than as
    its holder, and which nested hold it ends (an index into `owner.nested`; None: none).

    A nested hold's own token names it. The holder's token names the holder's hold, except from a
    process that took a nested hold and is not the holder (a command that took one with `--pid` and
    releases with the token it inherited), and except for a `lock run` hold: only its `lock run` ends it."""
    for i, held in enumerate(owner.nested):
        if held.token == token:
            return True, i
    if token != owner.token:
        return False, None
    if caller is not None and not _is_outer(owner, caller):
        for i in range(len(owner.nested) - 1, -1, -1):
            held = owner.nested[i]
            if _is(caller, (held.pid, held.ticks)) or _is(caller, held.by):
                return True, i
    return owner.pgid is not None, None


def _live(nested: tuple[Nested, ...]) -> tuple[Nested, ...]:
    return tuple(n for n in nested if procs.alive(n.pid, n.ticks))


@contextlib.contextmanager
def _held_with(repo: RepoPaths, token: str) -> Iterator[Owner]:
    """The record of the lock held with `token` (its own or a nested hold's), under the guard;
    LockNotOwned when it is not."""
    fd = _guard_fd(repo)
    try:
        with _guarded(repo, fd):
            owner = peek(repo.lock_dir)[0] if fs.check_lock_path(repo.lock_dir) else None
            if owner is None or not owner.admits(token):
                _taken_from(repo, token, owner)
                raise _not_owned(owner, token)
            yield owner
    finally:
        os.close(fd)


def nest(repo: RepoPaths, *, token: str, holder: Process, by: Process) -> tuple[Owner, str]:
    """Take a nested hold of the lock held with `token` (`michi lock acquire` under an inherited token)
    for `holder`, taken by the script `by`: the record and the nested hold's own token, which ends that
    hold only, never its holder's (ADR 0003)."""
    with _held_with(repo, token) as owner:
        live = _live(owner.nested)
        if len(live) >= MAX_NESTED:
            raise UsageError(
                f"{len(live)} nested holds of the repo lock are live already",
                hint="release each nested hold when done (`michi lock release --token TOKEN`)",
            )
        held = Nested(holder[0], holder[1], token_hex(16), by)
        owner = replace(owner, nested=(*live, held))
        publish(repo.lock_dir, owner)
        return owner, held.token


def _end_nested(repo: RepoPaths, owner: Owner, index: int) -> None:
    """End one nested hold (its entry goes, with the entries of holders that are gone)."""
    ended = owner.nested[index]
    rest = _live(owner.nested[:index] + owner.nested[index + 1 :])
    publish(repo.lock_dir, replace(owner, nested=rest))
    hashed = lost.token_hash
    events.append(
        repo.state_dir,
        "release",
        why="inner",
        token=hashed(ended.token),
        outer=hashed(owner.token),
        by_pid=os.getppid(),
    )


def release(
    repo: RepoPaths, *, token: str | None, force: bool, yes: bool, caller: Process | None = None
) -> tuple[Owner | None, str]:
    """Remove the lock if `token` is its token, or (force) if it is stale, or (force + yes) anyway.
    Returns the removed holder (None if the lock was free) and why it was removed. A dead `lock run`
    holder's leftover processes are ended first, under the guard (the reason then says so). A release
    made under the hold (`_works_under`: a nested hold's token, or its taker) ends that nested hold
    only: the reason is "inner", and so it stays when said again."""
    fd = _guard_fd(repo)
    try:
        with _guarded(repo, fd):
            if not fs.check_lock_path(repo.lock_dir):
                _taken_from(repo, token, None)
                return None, "free"
            owner, verdict = peek(repo.lock_dir)
            if force and owner is not None and owner.pgid and verdict.orphans:
                procs.end_members(owner.pgid, owner.pgid_ticks)
                verdict = judge(owner, lock_mtime=fs.lock_mtime(repo.lock_dir))
            if token is not None and owner is not None and not (force and yes):
                under, index = _works_under(owner, token, caller)
                if under:
                    if index is not None:
                        _end_nested(repo, owner, index)
                    return owner, "inner"
                if token != owner.token and lost.released_inner(repo.state_dir, token, owner.token):
                    return owner, "inner"  # said again: that nested hold is over, the lock still held
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
            # Nested holds end with it: a holder of one still live learns so from its release (lock_lost).
            nested = lost.nested_hashes(_live(owner.nested)) if owner else None
            events.append(
                repo.state_dir, "release", hold=hold, why=why, token=ended, nested=nested, by_pid=os.getppid()
            )
    finally:
        os.close(fd)
    return owner, why


def renew(repo: RepoPaths, *, token: str, ttl: float, caller: Process | None = None) -> Owner:
    """Extend the lease held with `token` to `ttl` from now; a renewal made under the hold (`_works_under`)
    never shortens it: a nested `renew --ttl 1` once cut a running `lock run`'s lease to a second."""
    with _held_with(repo, token) as owner:
        renewed = owner.renewed(ttl, never_shorter=_works_under(owner, token, caller)[0])
        publish(repo.lock_dir, renewed)
        return renewed
