"""`michi lock status` and `michi lock stats`: read-only views of the lock and its event log."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from michi.lock import admin, events
from michi.results import Result
from michi.session import Session


@dataclass(frozen=True)
class Status(Result):
    state: admin.LockState

    def to_json(self) -> Any:
        return self.state.to_json()


@dataclass(frozen=True)
class Stats(Result):
    numbers: dict[str, Any]
    log: str

    def to_json(self) -> Any:
        return {**self.numbers, "log": self.log}


def status(session: Session) -> Status:
    return Status(admin.state(session.repo))


def stats(session: Session) -> Stats:
    state_dir = session.repo.state_dir
    logged = events.read(state_dir)
    # Remote-lock events (ADR 0009) carry the remote's name; their holds are a different scale.
    numbers = events.summarize([e for e in logged if "remote" not in e])
    numbers["remote"] = events.summarize([e for e in logged if "remote" in e])
    return Stats(numbers, str(events.log_path(state_dir)))
