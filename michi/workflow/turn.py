"""A clone's turn on the remote (ADR 0004): fairness among clones whose pushes race for one branch.

Pushes race optimistically; a clone that keeps losing (slower to rebuild its commit, unlucky) could lose
for ever. After `push_retries` refused pushes a clone stops racing: it takes `refs/michi/turn/<branch>`
on the remote (a compare-and-swap push creating it, as the remote lock's ref, ADR 0009), builds on the
fresh tip and pushes. Every clone that was refused lately looks at the turn before it builds a commit
and waits while another clone holds it, and its push carries the turn ref's deletion leased on "absent"
(`--atomic`): a no-op on the remote while nobody holds a turn, a refusal (as stale) while someone does,
however late it was taken. The holder's own push deletes its turn the same way, leased on its record:
the turn ends with the push that lands. So the holder's push meets only pushes of clones that were not
refused in the last minute. The branch's fast-forward-only push still decides what lands, so a lost,
stale or ignored turn costs rounds, never an operation. A turn left by a dead holder is taken over (or
cleared) once it was seen unchanged for `STALE_AFTER` seconds by the waiter's own clock (no clocks
compared).
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import time
from pathlib import Path

from michi.errors import GitFailed, MichiError, RemoteRejected
from michi.git import lockref
from michi.host import hostname

PREFIX = "refs/michi/turn/"
# A turn that has not changed for this long is a dead holder's. Its holder may still wait for its clone's
# lock (30 s by default) and then build and push (seconds for a large commit): a live turn must outlast
# that, or waiters clear it and its holder's push is refused (its lease gone) round after round.
STALE_AFTER = 60.0  # `MICHI_TURN_STALE` (seconds) overrides it
WAIT_FOR = 120.0  # longest wait for a turn (others' turns included) before the command gives up
_NET = 30.0  # a git call to the remote that has not answered by then: the remote is down
_POLL_MIN, _POLL_MAX = 0.05, 1.0  # each look is a round trip to the remote (a hosted one, too)


def backoff(previous: float) -> float:
    """Decorrelated jitter (the next sleep drawn between the floor and three times the last, capped):
    clones refused by the same push spread out instead of colliding again in step."""
    return min(0.5, random.uniform(0.01, max(0.01, previous) * 3))


def _seconds(name: str, default: float) -> float:
    try:
        value = float(os.environ.get(name) or default)
    except ValueError:
        return default
    return value if value >= 0 else default


class Turn:
    def __init__(self, cwd: Path, common_dir: Path, remote: str, branch: str, agent: str | None) -> None:
        self.cwd, self.common_dir, self.remote = cwd, common_dir, remote
        self.ref = PREFIX + branch
        self.agent = agent
        self.mine: str | None = None  # the record commit the remote's turn ref names while it is ours
        self.unavailable = False  # the remote refuses michi's refs: race as before, with no turns
        self._first_seen: dict[str, float] = {}

    def release(self) -> tuple[str, str] | None:
        """The turn ref's deletion that rides on the branch's push (`git.push`): leased on our turn while
        we hold it (the push that lands ends it), else on no turn at all (a no-op on the remote), so
        that the push is refused as stale while another clone holds the turn, however late it took it."""
        return None if self.unavailable else (self.ref, self.mine or "")

    def landed(self) -> None:
        self.mine = None  # the push that landed deleted it

    def wait(self, want: bool) -> None:
        """Return once no other clone holds the turn; with `want`, once this one holds it. Raises
        `push_retries_exhausted` after `WAIT_FOR` seconds of others' turns."""
        if self.unavailable:
            return
        deadline = time.monotonic() + WAIT_FOR
        stale_after = _seconds("MICHI_TURN_STALE", STALE_AFTER)
        delay = _POLL_MIN
        while not self.unavailable:
            now = time.monotonic()
            if now > deadline:
                raise GitFailed(
                    f"other clones held the turn to push for {WAIT_FOR:.0f} s",
                    code="push_retries_exhausted",
                    hint="nothing of this command landed; retry it",
                )
            held = lockref.remote_oid(self.cwd, self.remote, self.ref, timeout=_NET)
            if held is not None and held == self.mine:
                return
            self.mine = None  # not (or no longer) ours: taken over by a waiter who judged it stale
            if held is None and not want:
                return
            if held is None or now - self._first_seen.setdefault(held, now) >= stale_after:
                if not want:  # a dead holder's turn: clear it so that nobody waits on it any more
                    if self._swap("", held):
                        continue
                else:
                    record = self._record()
                    if self._swap(record, held) and not self.unavailable:
                        self.mine = record
                    if self.mine or self.unavailable:
                        return
                # The swap lost (another clone was first, or the remote keeps the ref locked): wait
                # as for a held turn, never asking again at once.
            time.sleep(delay)
            delay = min(_POLL_MAX, delay * 1.5)

    def give_back(self) -> None:
        """End our turn if this run did not land (its command failed): best effort, it expires anyway."""
        if self.mine is not None:
            mine, self.mine = self.mine, None
            with contextlib.suppress(MichiError, OSError):
                lockref.cas_push(self.cwd, self.remote, self.ref, "", mine, timeout=_NET)

    def _swap(self, new: str, expected: str | None) -> bool:
        try:
            return lockref.cas_push(self.cwd, self.remote, self.ref, new, expected, timeout=_NET).ok
        except RemoteRejected:
            self.unavailable = True  # a host that refuses refs/michi/*: no turns, nobody waits
            return True

    def _record(self) -> str:
        data = {"host": hostname(), "pid": os.getpid(), "agent": self.agent, "created": time.time()}
        return lockref.write_record(self.cwd, self.common_dir, json.dumps(data), "michi: turn to push")
