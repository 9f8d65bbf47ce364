"""What agents did, replayed from the audit trail: michi's commit subjects and `Michi-*` trailers (ADR 0013).

Pure functions over parsed log entries (no git here): a claim opens a cycle on a task; `done` closes it
(claim-to-done time); `release`, `stop` or `delete` close it unfinished; `reap`, or a claim by another
agent (allowed only once the first one expired), close it as expired. The per-day series ends today: a
commit dated later (a clone whose clock is ahead, a hand-made date up to year 9999 and past it) counts on
today, so no history makes it longer than the days since 1970.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from typing import Any, Protocol

NOBODY = "(none)"  # commits made without --agent: a person at the terminal
UNFINISHED = ("release", "stop", "delete")


class Entry(Protocol):
    """A parsed commit (michi.git.trail.LogEntry); read only."""

    @property
    def time(self) -> float: ...
    @property
    def subject(self) -> str: ...
    @property
    def trailers(self) -> dict[str, str]: ...
    @property
    def files(self) -> list[tuple[str, str]]: ...


@dataclass(frozen=True)
class Event:
    time: float
    agent: str
    action: str  # add, claim, renew, release, start, stop, review, done, delete, reap, import...
    tasks: tuple[str, ...]  # uuids
    opened: int = 0  # task files this commit added


def _uuid(path: str) -> str:
    return path.rsplit("/", 1)[-1].removesuffix(".json")


def events(entries: Iterable[Entry]) -> list[Event]:
    """michi's commits as events; other commits (hand edits, init) are left out."""
    out = []
    for entry in entries:
        words = entry.subject.split()
        if entry.trailers.get("Michi-Txn") is None or len(words) < 2 or words[0] != "michi:":
            continue
        action = words[2] if words[1] == "task" and len(words) > 2 else words[1]
        single = entry.trailers.get("Michi-Task")
        uuids = (single,) if single else tuple(_uuid(p) for _s, p in entry.files)
        opened = sum(1 for status, _p in entry.files if status == "A")
        out.append(Event(entry.time, entry.trailers.get("Michi-Agent") or NOBODY, action, uuids, opened))
    return out


@dataclass
class AgentFigures:
    claims: int = 0
    completions: int = 0
    expired: int = 0
    released: int = 0
    cycles: list[float] = field(default_factory=list)  # claim-to-done seconds

    def to_json(self) -> dict[str, Any]:
        ordered = sorted(self.cycles)
        p90 = ordered[min(len(ordered) - 1, round(0.9 * (len(ordered) - 1)))] if ordered else None
        return {
            "claims": self.claims,
            "completions": self.completions,
            "expired": self.expired,
            "released": self.released,
            "claim_to_done": {
                "count": len(ordered),
                "median": round(statistics.median(ordered), 3) if ordered else None,
                "p90": None if p90 is None else round(p90, 3),
            },
        }


def day(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).date().isoformat()  # 0001-01-01: strftime gives "1-01-01"


def _add(counts: dict[str, int], when: str, n: int) -> None:
    counts[when] = counts.get(when, 0) + n


@dataclass
class Replay:
    since: float | None = None
    agent: str | None = None
    agents: dict[str, AgentFigures] = field(default_factory=dict)
    opened: dict[str, int] = field(default_factory=dict)
    closed: dict[str, int] = field(default_factory=dict)
    open_claims: dict[str, tuple[str, float]] = field(default_factory=dict)  # uuid -> (agent, since)
    now: float = field(default_factory=time.time)  # the series' last day: later commits count on it

    def _day(self, ts: float) -> str:
        """The UTC day `ts` counts on: never after today (one commit dated 9999 made `stats` build three
        million rows; one past 9999 made it fail), never before 1970."""
        return day(min(max(ts, 0.0), self.now))

    def _counts(self, ev: Event, agent: str) -> AgentFigures | None:
        """The figures to add to, or None when the event is outside --since or another agent's."""
        if (self.since is not None and ev.time < self.since) or (
            self.agent is not None and agent != self.agent
        ):
            return None
        return self.agents.setdefault(agent, AgentFigures())

    def _end(self, uuid: str, ev: Event, how: str) -> None:
        holder = self.open_claims.pop(uuid, None)
        if holder is None:
            return
        figures = self._counts(ev, holder[0])
        if figures is None:
            return
        if how == "done":
            figures.cycles.append(max(0.0, ev.time - holder[1]))
        elif how == "expired":
            figures.expired += 1
        else:
            figures.released += 1

    def feed(self, ev: Event) -> None:
        for uuid in ev.tasks:
            held = self.open_claims.get(uuid)
            if ev.action == "claim":
                if held is not None and held[0] != ev.agent:
                    self._end(uuid, ev, "expired")  # taken over: only an expired claim can be
                if held is None or held[0] != ev.agent:
                    self.open_claims[uuid] = (ev.agent, ev.time)
            elif ev.action == "reap":
                self._end(uuid, ev, "expired")
            elif ev.action in UNFINISHED:
                self._end(uuid, ev, "released")
            elif ev.action == "done":
                self._end(uuid, ev, "done")
        mine = self._counts(ev, ev.agent)
        if ev.action == "claim" and mine is not None:
            mine.claims += len(ev.tasks)
        elif ev.action == "done" and mine is not None:
            mine.completions += len(ev.tasks)
        if mine is not None:  # the repository's series, by the same filters
            if ev.opened:
                _add(self.opened, self._day(ev.time), ev.opened)
            if ev.action in ("done", "delete"):
                _add(self.closed, self._day(ev.time), len(ev.tasks))
            if not any((mine.claims, mine.completions, mine.expired, mine.released, mine.cycles)):
                del self.agents[ev.agent]  # an agent that only added tasks is no row of its own

    def series(self, today: float | None = None) -> list[dict[str, Any]]:
        """One row per UTC day from the first day with activity (or --since) to today, zeros included."""
        seen = sorted({*self.opened, *self.closed})
        if not seen:
            return []
        first = date.fromisoformat(seen[0] if self.since is None else day(self.since))
        last = max(
            date.fromisoformat(day(self.now if today is None else today)), date.fromisoformat(seen[-1])
        )
        rows = []
        for n in range((last - first).days + 1):
            name = date.fromordinal(first.toordinal() + n).isoformat()
            rows.append(
                {"date": name, "opened": self.opened.get(name, 0), "closed": self.closed.get(name, 0)}
            )
        return rows


def replay(
    evs: Iterable[Event], *, since: float | None, agent: str | None, now: float | None = None
) -> Replay:
    state = Replay(since=since, agent=agent) if now is None else Replay(since=since, agent=agent, now=now)
    for ev in evs:
        state.feed(ev)
    return state
