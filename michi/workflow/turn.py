"""A clone's turn on the remote (ADR 0004): fairness among clones whose pushes race for one branch.

Pushes race optimistically; a clone that keeps losing (slower to rebuild its commit, unlucky) could lose
for ever, and each lost race cost the remote a whole push received and checked. After `push_retries`
refused pushes a clone stops racing: it takes `refs/michi/turn/<branch>` on the remote (a compare-and-swap
push creating it, as the remote lock's ref, ADR 0009), builds on the fresh tip and pushes. A clone that
was refused lately queues the same way before its command's first push (it waits while another clone
holds the turn, then takes it), and its push carries the turn ref's deletion leased on "absent" or on its
own turn (`--atomic`): a no-op on the remote while nobody holds a turn, a refusal (as stale) while another
clone does, however late it was taken. The holder's own push deletes its turn the same way, leased on its
record: the turn ends with the push that lands. So the holder's push meets only pushes of clones that
were not refused in the last minute. The branch's fast-forward-only push still decides what lands, so a lost,
stale or ignored turn costs rounds, never an operation. A turn left by a dead holder is taken over (or
cleared) once it was seen unchanged for `STALE_AFTER` seconds by the waiter's own clock (no clocks
compared), or, when its record names a process on this machine (host, boot, PID namespace) that is gone
(its PID dead or reused: start ticks), as soon as a waiter has read the record (`JUDGE_AFTER`).

A turn is the clone's, not the process's: it is taken without the clone's lock, and pushes of one clone
are serialized by that lock anyway. Any process of the clone that finds its clone's record on the remote
uses it as its own (its push is leased on it and ends it), so a lock holder never waits on a turn that
one of its own clone's processes took and cannot use before that holder lets the lock go.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import tempfile
import time
from pathlib import Path

from michi.errors import GitFailed, RemoteRejected, best_effort
from michi.git import lockref
from michi.host import hostname
from michi.lock import procs
from michi.lock.record import boot_id, pid_namespace
from michi.lock.remote_record import MAX_RECORD_BYTES, CorruptRemoteRecord, decode

PREFIX = "refs/michi/turn/"
# A turn that has not changed for this long is a dead holder's. Its holder may still wait for its clone's
# lock (30 s by default) and then build and push (seconds for a large commit): a live turn must outlast
# that, or waiters clear it and its holder's push is refused (its lease gone) round after round.
STALE_AFTER = 60.0  # `MICHI_TURN_STALE` (seconds) overrides it
WAIT_FOR = 120.0  # longest wait for a turn (others' turns included) before the command gives up
# A turn held this long has its record read (one fetch of a tiny commit, once per record): a holder on
# this machine whose process is gone is told at once instead of after `STALE_AFTER`. A live turn usually
# ends sooner (its holder's lock, build and push), so most turns are never read.
JUDGE_AFTER = 1.0
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
        self._gone: dict[str, bool] = {}  # record -> its holder is provably gone (read once each)
        self._ours: dict[str, bool] = {}  # record -> written by a process of this clone (read once each)
        self.waited = False  # a wait found another clone's turn (or lost the swap for a free one)

    def release(self) -> tuple[str, str] | None:
        """The turn ref's deletion that rides on the branch's push (`git.push`): leased on our turn while
        we hold it (the push that lands ends it), else on no turn at all (a no-op on the remote), so
        that the push is refused as stale while another clone holds the turn, however late it took it."""
        return None if self.unavailable else (self.ref, self.mine or "")

    def landed(self) -> None:
        self.mine = None  # the push that landed deleted it

    def wait(self, want: bool, limit: float | None = None) -> None:
        """Return once no other clone holds the turn; with `want`, once this one holds it. Raises
        `push_retries_exhausted` after `limit` (default `WAIT_FOR`) seconds of others' turns."""
        if self.unavailable:
            return
        limit = WAIT_FOR if limit is None else limit
        deadline = time.monotonic() + limit
        stale_after = _seconds("MICHI_TURN_STALE", STALE_AFTER)
        delay = _POLL_MIN
        while not self.unavailable:
            now = time.monotonic()
            if now > deadline:
                raise GitFailed(
                    f"other clones held the turn to push for {limit:.0f} s",
                    code="push_retries_exhausted",
                    hint="nothing of this command landed; retry it",
                )
            held = lockref.remote_oid(self.cwd, self.remote, self.ref, timeout=_NET)
            if held is not None and (held == self.mine or self._of_this_clone(held)):
                self.mine = held  # ours, or taken by another process of this clone: its lock orders us
                return
            self.mine = None  # not (or no longer) ours: taken over by a waiter who judged it stale
            if held is None and not want:
                return
            seen = now - self._first_seen.setdefault(held, now) if held is not None else 0.0
            if held is None or seen >= stale_after or (seen >= JUDGE_AFTER and self._holder_gone(held)):
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
            self.waited = True
            time.sleep(delay)
            delay = min(_POLL_MAX, delay * 1.5)

    def give_back(self) -> None:
        """End our turn if this run did not land (its command failed): best effort, it expires anyway.
        A turn another process of this clone took is left to it (it may still be about to use it)."""
        if self.mine is not None:
            mine, self.mine = self.mine, None
            if self._ours.get(mine):
                return
            with best_effort:
                lockref.cas_push(self.cwd, self.remote, self.ref, "", mine, timeout=_NET)

    def _swap(self, new: str, expected: str | None) -> bool:
        try:
            return lockref.cas_push(self.cwd, self.remote, self.ref, new, expected, timeout=_NET).ok
        except RemoteRejected:
            self.unavailable = True  # a host that refuses refs/michi/*: no turns, nobody waits
            return True

    def _record(self) -> str:
        data = {**holder(os.getpid()), "clone": clone_id(self.common_dir), "agent": self.agent}
        data["created"] = time.time()
        return lockref.write_record(self.cwd, self.common_dir, json.dumps(data), "michi: turn to push")

    def _of_this_clone(self, oid: str) -> bool:
        """Whether the turn record `oid` was taken by a process of this clone (read once, locally: a
        record this clone wrote is in its own object store; another clone's is not, or names another)."""
        if oid not in self._ours:
            raw = lockref.read_record(self.cwd, oid, MAX_RECORD_BYTES)
            data = _record(raw)
            mine = clone_id(self.common_dir)
            self._ours[oid] = bool(mine) and isinstance(data, dict) and data.get("clone") == mine
        return self._ours[oid]

    def _holder_gone(self, oid: str) -> bool:
        """Whether the turn record `oid` names a process of this machine that is gone (read once)."""
        if oid not in self._gone:
            raw = lockref.read_record(self.cwd, oid, MAX_RECORD_BYTES)
            if raw is None:  # another clone's record: bring its commit here (no local ref written)
                with best_effort:
                    lockref.fetch_ref_objects(self.cwd, self.remote, self.ref, timeout=_NET)
                raw = lockref.read_record(self.cwd, oid, MAX_RECORD_BYTES)
            if raw is None:
                return False  # moved on meanwhile, or unreadable: judged again if seen again
            data = _record(raw)
            self._gone[oid] = gone(data)
        return self._gone[oid]


def holder(pid: int) -> dict[str, object]:
    """What a turn record says of its holder: enough for a waiter on this machine to tell it is gone."""
    return {
        "host": hostname(),
        "pid": pid,
        "ticks": procs.start_ticks(pid),
        "boot": boot_id(),
        "pidns": pid_namespace(),
    }


def gone(data: object) -> bool:
    """Is the holder a turn record names provably gone? Only a process of this host, boot and PID
    namespace can be judged (its PID dead, or another process's now: start ticks differ); anything else
    (another host, an older record without ticks, a hand-made one) waits for `STALE_AFTER`."""
    if not isinstance(data, dict):
        return False
    pid, ticks = data.get("pid"), data.get("ticks")
    if type(pid) is not int or type(ticks) is not int or pid <= 0:
        return False
    here = (hostname(), boot_id(), pid_namespace())
    if not all(here) or (data.get("host"), data.get("boot"), data.get("pidns")) != here:
        return False
    return not procs.alive(pid, ticks) if procs.HAS_PROC else False


def clone_id(common_dir: Path) -> str:
    """This clone's name: a random one made once (`.git/michi/clone-id`), joined with the device and inode
    of its git folder, so that a copy of the clone (`cp -a`, a snapshot: same file, another folder and
    another lock) is another clone. Its processes share its lock, and so its turn. Empty when it can be
    neither read nor made (a read-only clone: its turns are never shared)."""
    try:
        st = os.stat(common_dir)
    except OSError:
        return ""
    path = common_dir / "michi" / "clone-id"
    name = _read_name(path)
    if name is None:
        with contextlib.suppress(OSError):
            _make_name(path)
        name = _read_name(path)
    return "" if name is None else f"{name}.{st.st_dev:x}.{st.st_ino:x}"


def _read_name(path: Path) -> str | None:
    try:
        text = path.read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        return None
    return text if len(text) == 32 and all(c in "0123456789abcdef" for c in text) else None


def _make_name(path: Path) -> None:
    """Write a new name whole (a file of its own first: threads and processes may race here); the first
    one linked in names the clone, and one that is damaged (empty, cut short) is replaced."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, draft = tempfile.mkstemp(prefix="clone-id.", suffix=".tmp", dir=path.parent)
    try:
        os.write(fd, (os.urandom(16).hex() + "\n").encode("ascii"))
        os.fsync(fd)
        os.close(fd)
        fd = -1
        try:
            os.link(draft, path)
        except FileExistsError:
            if _read_name(path) is None:
                os.replace(draft, path)  # damaged: whoever reads next reads a whole name
    finally:
        if fd >= 0:
            os.close(fd)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(draft)


def _record(raw: bytes | None) -> object:
    """A turn record's JSON; None when there is none or it is not one michi wrote (anyone who can push
    writes the ref: nesting deeper than the stack or megabytes is no record, never a crash)."""
    try:
        return decode(raw) if raw is not None else None
    except CorruptRemoteRecord:
        return None
