"""The remote lock's errors: the local lock's codes (`lock_busy`, `lock_lost`, `lock_not_owned`,
`lock_live`) with the remote holder's details, plus an unreadable record."""

from __future__ import annotations

import time
from typing import Any

from michi.durations import duration, stamp
from michi.errors import Conflict
from michi.lock.errors import LockLive, LockLost, LockNotOwned, LockTimeout
from michi.lock.record import parse_iso
from michi.lock.remote_record import REF, RemoteRecord

BUSY_HINT = (
    "wait and retry (--wait SECONDS); `michi lock status --remote` shows the holder; a holder that died "
    "is taken over once its record has not been renewed for its TTL"
)


def describe(record: RemoteRecord | None) -> str:
    if record is None:
        return "nobody"
    who = f"PID {record.pid} on {record.host}" + (f" (agent {record.agent})" if record.agent else "")
    held_for = duration(max(0.0, time.time() - record.created_ts))
    return f"{who} running {record.command!r} for {held_for} (fence {record.fence})"


def holder_details(record: RemoteRecord | None, unchanged_for: float | None = None) -> dict[str, Any]:
    if record is None or not record.held:
        return {"holder": None}
    return {
        "holder": {
            "pid": record.pid,
            "host": record.host,
            "agent": record.agent,
            "command": record.command,
            "created": stamp(record.created_ts),
            "renewed": stamp(parse_iso(record.renewed)),
            "expires": stamp(record.expires_ts),
            "ttl": record.ttl,
            "fence": record.fence,
            "age": round(max(0.0, time.time() - record.created_ts), 3),
            "unchanged_for": None if unchanged_for is None else round(unchanged_for, 3),
        }
    }


def busy(remote: str, record: RemoteRecord | None, waited: float, unchanged_for: float) -> LockTimeout:
    return LockTimeout(
        f"the remote lock on {remote!r} is held by {describe(record)}; gave up after {waited:.1f}s",
        hint=BUSY_HINT,
        waited=round(waited, 3),
        lock=f"{remote} {REF}",
        checked_at=stamp(time.time()),
        **holder_details(record, unchanged_for),
    )


def lost(remote: str, why: str, record: RemoteRecord | None = None) -> LockLost:
    return LockLost(
        f"lost the remote lock on {remote!r}: {why}",
        hint="the command was stopped; check what it left half-done, then run it again",
        lock=f"{remote} {REF}",
        **holder_details(record),
    )


def not_owned(remote: str, token: str, record: RemoteRecord | None) -> LockNotOwned:
    holder = describe(record) if record is not None and record.held else "nobody"
    return LockNotOwned(
        f"the remote lock on {remote!r} is not held with token {token[:8]}...; it is held by {holder}",
        hint="pass the token `michi lock acquire --remote` printed (or MICHI_REMOTE_LOCK_TOKEN)",
        **holder_details(record),
    )


def live(remote: str, record: RemoteRecord, unchanged_for: float) -> LockLive:
    return LockLive(
        f"the remote lock on {remote!r} is live: held by {describe(record)}, renewed "
        f"{duration(unchanged_for)} ago as seen from here (TTL {duration(record.ttl)})",
        hint="clearing a live lock lets two machines work at once; add --yes if you are sure",
        **holder_details(record, unchanged_for),
    )


class RemoteRecordCorrupt(Conflict):
    """The lock ref names a commit whose `owner.json` is not a record michi wrote."""

    code = "lock_record_corrupt"

    @classmethod
    def at(cls, remote: str, oid: str, reason: str) -> RemoteRecordCorrupt:
        return cls(
            f"the remote lock record on {remote!r} ({REF} = {oid[:12]}) is unreadable: {reason}",
            hint=f"inspect it with `git fetch {remote} {REF} && git show FETCH_HEAD:owner.json`; "
            "`michi lock release --remote --force --yes` replaces it with a free record",
            oid=oid,
        )
