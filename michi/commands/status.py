"""`michi status`: the whole swarm at a glance, read the way the read-only commands read (no lock, no
network unless `--fetch`). Tasks come from the list cache (ADR 0008), so a status at 10,000 tasks costs
what `task list` costs; the lock, journal and sync marker are a few file reads (ADR 0013)."""

from __future__ import annotations

import calendar
import json
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from michi.commands import task_common
from michi.commands.freshness import How
from michi.results import Result
from michi.session import Session
from michi.tasks.model import STATES, tw_date
from michi.tasks.table import COL, Table


@dataclass(frozen=True)
class StatusReport(Result):
    data: dict[str, Any]
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> Any:
        return self.data


def _ts(text: str | None) -> float | None:
    """A Taskwarrior date (20250131T120000Z) as epoch seconds. By slicing: `time.strptime`'s first call
    costs ~15 ms of imports and regex compiling, a tenth of a whole status."""
    if not text or len(text) != 16 or text[8] != "T" or text[15] != "Z":
        return None
    try:
        fields = (text[0:4], text[4:6], text[6:8], text[9:11], text[11:13], text[13:15])
        return float(calendar.timegm((*(int(f) for f in fields), 0, 0, 0)))
    except ValueError:
        return None


def _tasks(table: Table, problems: int, now: float) -> dict[str, Any]:
    """Counts by state, every claim (expired ones marked), the oldest task in progress."""
    counts = Counter(table[COL["state"]])
    claims, oldest = [], None
    columns = (table[COL["state"]], table[COL["assignee"]], table[COL["json"]])
    for state, assignee, fragment in zip(*columns, strict=True):
        if state != "in_progress":
            continue
        task = json.loads(fragment)  # only tasks in progress: a handful, not 10,000
        since = _ts(task["start"])
        if assignee:
            expires = _ts(task["claim_expires"])
            claims.append(
                {
                    "id": task["id"],
                    "uuid": task["uuid"],
                    "description": task["description"],
                    "agent": assignee,
                    "domain": task["domain"],
                    "since": task["start"],
                    "age": None if since is None else round(now - since, 3),
                    "expires": task["claim_expires"],
                    "lease_left": None if expires is None else round(expires - now, 3),
                    "expired": expires is not None and expires <= now,
                }
            )
        if since is not None and (oldest is None or since < oldest[0]):
            oldest = (since, task)
    oldest_view = None
    if oldest is not None:
        since, task = oldest
        oldest_view = {
            "id": task["id"],
            "description": task["description"],
            "assignee": task["assignee"],
            "since": task["start"],
            "age": round(now - since, 3),
        }
    claims.sort(key=lambda c: (not c["expired"], c["lease_left"] if c["lease_left"] is not None else 1e18))
    by_state = {s: counts.get(s, 0) for s in STATES}
    return {
        "tasks": {**by_state, "total": len(table[0]), "unreadable": problems},
        "claims": claims,
        "oldest_in_progress": oldest_view,
    }


# `lock status` for a free lock with nobody queued (pinned against `admin.state` in the tests): most statuses
# see a free lock, and then two file-system calls answer without importing the lock package.
def _lock(session: Session, now: float) -> dict[str, Any]:
    from michi.lock import admin

    state = admin.state(session.repo)
    data = state.to_json()
    holder = data.get("holder")
    data["age"] = holder["age"] if holder else None
    if state.held and holder is None:  # no readable record: the lock folder's own age
        try:
            data["age"] = round(max(0.0, now - session.repo.lock_dir.stat().st_mtime), 3)
        except OSError:
            data["age"] = None
    data["fence"] = state.owner.fence if state.owner is not None else None
    return data


def remote_lock(session: Session, fetch: bool) -> dict[str, Any] | None:
    """The remote lock (ADR 0013), as `lock status --remote --json` gives it. Asking costs a round trip
    to the remote, so status asks with --fetch, or when this clone has used the remote lock (its record
    of sightings exists); otherwise `null`. A remote that cannot be asked is reported, not fatal."""
    from michi.errors import MichiError
    from michi.lock.remote_seen import SEEN_FILE

    if not fetch and not (session.repo.state_dir / SEEN_FILE).exists():
        return None
    from michi.commands import lock_remote

    try:
        return dict(lock_remote.status(session).to_json())
    except MichiError as exc:
        return dict(exc.to_json())


def collect(session: Session, fetch: bool = False, now: float | None = None) -> StatusReport:
    from michi.commands import status_sync

    got = task_common.read_table_stamped(session, How.FETCH if fetch else How.CACHED)  # no network: ADR 0013
    now = time.time() if now is None else now
    lock = _lock(session, now)
    data: dict[str, Any] = {
        "checked": tw_date(now),
        "lock": lock,
        "remote_lock": remote_lock(session, fetch),
        **_tasks(got.table, got.problems, now),
        "sync": (sync := status_sync.sync_state(session, got.stamp, now)),
        "pending": status_sync.pending(session, now, lock_live=lock["held"] and not lock["stale"], sync=sync),
    }
    return StatusReport(data, got.notes)
