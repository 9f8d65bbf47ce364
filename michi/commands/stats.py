"""`michi stats`: what the swarm did, from the git history of the task branch (one `git log` call), plus
this clone's lock figures (`michi lock stats`). No lock, no network unless `--fetch` (ADR 0013)."""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from michi.errors import UsageError
from michi.results import Result
from michi.session import Session
from michi.tasks.model import tw_date

_RELATIVE = re.compile(r"^(\d+)\s*([smhdw])$")
_UNIT = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
LAST_SINCE = 253402300799.0  # 9999-12-31T23:59:59Z, the last second a date here can name


@dataclass(frozen=True)
class StatsReport(Result):
    data: dict[str, Any]
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> Any:
        return self.data


def parse_since(text: str, now: float) -> float:
    """A date (2025-01-31, UTC), a date and time (ISO 8601; UTC unless it says otherwise), a Taskwarrior
    date (20250131T120000Z), or an age: 30m, 12h, 7d, 2w. From 1970 (git's first commit time) to 9999:
    `0001-01-01` or `100000000w` made `stats` exit 1."""
    when = _since(text.strip(), now)
    if when is None:
        raise UsageError(
            f"cannot read --since {text!r} as a date",
            code="bad_date",
            hint="use a date (2025-01-31), an ISO date and time, or an age such as 12h, 7d, 2w",
        )
    if not 0 <= when <= LAST_SINCE:
        raise UsageError(
            f"--since {text!r} is out of range: michi counts from 1970-01-01 to 9999-12-31",
            code="bad_date",
            hint="use a date from 1970-01-01 on, or leave --since out to count the whole history",
        )
    return when


def _since(value: str, now: float) -> float | None:
    """`value` as seconds since the epoch (before it: negative), or None when it is no date."""
    match = _RELATIVE.match(value.lower())
    if match:
        try:
            age = int(match.group(1)) * _UNIT[match.group(2)]
        except ValueError:  # more digits than Python reads (4300): an age no date is that old
            return -1.0
        return now - age if age <= now else -1.0  # an int past float's range is compared, not converted
    for parse in (
        lambda v: datetime.strptime(v, "%Y%m%dT%H%M%SZ").replace(tzinfo=UTC),
        datetime.fromisoformat,
    ):
        try:
            when = parse(value.replace("Z", "+00:00") if parse is datetime.fromisoformat else value)
        except ValueError:
            continue
        try:
            return (when if when.tzinfo else when.replace(tzinfo=UTC)).timestamp()
        except (ValueError, OverflowError):  # 0001-01-01T00:00:00+14:00 is in year 0
            return -1.0
    return None


def run(session: Session, *, since: str | None, agent: str | None, fetch: bool = False) -> StatsReport:
    from michi.commands import freshness, lock_info
    from michi.git.trail import log_entries
    from michi.tasks import activity

    now = time.time()
    start = None if since is None else parse_since(since, now)
    mode = freshness.How.FETCH if fetch else freshness.How.CACHED  # no network unless asked (ADR 0013)
    got = freshness.read_snapshot(session, mode)
    snap = got.snapshot
    entries = log_entries(session.repo.worktree, snap.ref) if snap.commit else []
    state = activity.replay(activity.events(entries), since=start, agent=agent, now=now)
    days = state.series()
    data = {
        "ref": snap.ref,
        "since": None if start is None else tw_date(start),
        "agent": agent,
        "commits": len(entries),
        "agents": {name: figures.to_json() for name, figures in sorted(state.agents.items())},
        "days": days,
        "totals": {"opened": sum(d["opened"] for d in days), "closed": sum(d["closed"] for d in days)},
        "lock": lock_info.stats(session).to_json(),
    }
    note = freshness.note(snap.synced_at, snap.branch, snap.remote, mode, got.fetched, got.failure)
    return StatsReport(data, [note])
