"""How fresh a read is (ADR 0008): whether it fetches first, and the note that says how old its answer is.

An agent acts on what a read shows, so a stale answer is a wrong answer: `next` always asks the remote
(like `next --claim`), `list` and `show` fetch when the last sync is older than `read_max_age`, and every
read says on stderr which state it answered from, errors included.
"""

from __future__ import annotations

import time
from enum import Enum
from typing import TYPE_CHECKING

from michi.durations import duration
from michi.errors import GitFailed
from michi.plain import Plain
from michi.session import Session

if TYPE_CHECKING:
    from michi.workflow.snapshot import Snapshot


class How(Enum):
    CACHED = "cached"  # as last synced (lookups before a transaction; export and doctor without --fetch)
    AUTO = "auto"  # fetch when the last sync is older than read_max_age (list, show)
    FETCH = "fetch"  # always fetch; a remote failure is an error (--fetch, next)
    OFFLINE = "offline"  # never fetch, and say so (--no-fetch, next --offline)


def how(fetch: bool, no_fetch: bool, default: How = How.AUTO) -> How:
    if fetch and no_fetch:
        from michi.errors import UsageError

        raise UsageError("--fetch and --no-fetch contradict each other", hint="pass one of them")
    return How.FETCH if fetch else How.OFFLINE if no_fetch else default


def is_stale(synced_at: float | None, max_age: float) -> bool:
    """Never synced, or synced longer ago than `max_age` seconds (0: always stale), or "synced" in the
    future: a clock stepped back (NTP, a restored VM) or a mark copied with its time would otherwise keep
    every read on an old answer until the clock caught up."""
    if synced_at is None or max_age <= 0:
        return True
    age = time.time() - synced_at
    return age < 0 or age >= max_age


class Read(Plain):
    __slots__ = ("failure", "fetched", "snapshot")

    def __init__(self, snapshot: Snapshot, fetched: bool, failure: str | None = None) -> None:
        self.snapshot = snapshot
        self.fetched = fetched
        self.failure = failure  # why an automatic refresh failed (the answer is then as last synced)


def read_snapshot(session: Session, mode: How) -> Read:
    """The task branch, fetched first when `mode` asks for it. An automatic refresh that fails falls back
    to the last sync and says so; an asked-for fetch that fails is the command's error. A task layout this
    michi does not know is refused, whichever read or change asked (ADR 0006)."""
    from michi.tasks.domains import UnknownLayout, check_layout

    got = _read_snapshot(session, mode)
    try:
        check_layout(got.snapshot)
    except UnknownLayout as exc:
        snap = got.snapshot
        exc.notes = [note(snap.synced_at, snap.branch, snap.remote, mode, got.fetched, got.failure)]
        raise
    return got


def _read_snapshot(session: Session, mode: How) -> Read:
    from michi.workflow import snapshot

    paths, config = session.repo, session.config
    want = mode is How.FETCH or (
        mode is How.AUTO and is_stale(snapshot.synced_at(paths, config.remote), config.read_max_age)
    )
    if not want:
        return Read(snapshot.read_snapshot(paths, config), fetched=False)
    try:
        # A fetch meeting another one in this clone tries again itself (`git.fetch_branch`).
        return Read(snapshot.read_snapshot(paths, config, fetch=True), fetched=True)
    except GitFailed as exc:
        if mode is How.FETCH:
            exc.notes = [_failed_note(session)]
            raise
        return Read(snapshot.read_snapshot(paths, config), fetched=False, failure=exc.message)


def _failed_note(session: Session) -> str:
    from michi.workflow import snapshot

    synced = snapshot.synced_at(session.repo, session.config.remote)
    when = "never synced" if synced is None else f"last synced {duration(time.time() - synced)} ago"
    return f"no answer from the remote; this clone was {when} (--offline answers from that)"


def note(
    synced_at: float | None, branch: str, remote: str | None, mode: How, fetched: bool, failure: str | None
) -> str:
    """Which state a read answered from, in one line. After a fetch it does not suggest fetching."""
    if remote is None:
        return f"tasks as on the local branch {branch} (no remote configured)"
    if fetched:
        return f"tasks as on {remote}/{branch}, fetched just now"
    if synced_at is None:
        age = f"tasks as on the local branch {branch} (never synced with {remote})"
    else:
        age = f"tasks as of the last sync {duration(time.time() - synced_at)} ago"
    if failure is not None:
        return f"could not refresh from {remote} ({failure}); {age}"
    if mode is How.OFFLINE:
        return f"{age}, not fetched (offline)"
    return f"{age} (--fetch to refresh now)"
