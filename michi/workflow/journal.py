"""The transaction journal: what a lock holder is doing, so the next holder can finish it (ADR 0004).

Written before anything irreversible and cleared after the local branch is up to date. An entry left
behind means its holder died (SIGKILL, power loss of the process) or worked offline: the next
transaction applies its mutation again unless its commit already reached the remote.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import Path

from michi.atomic import write_atomic
from michi.workflow.mutation import Mutation

STARTED, PUSHING, OFFLINE = "started", "pushing", "offline"


@dataclass(frozen=True)
class Entry:
    txn: str
    mutation: Mutation
    command: str
    agent: str | None
    state: str = STARTED
    commit: str | None = None  # the commit last built for it (pushed or about to be)

    def but(self, **changes: object) -> Entry:
        return replace(self, **changes)  # type: ignore[arg-type]


class Journal:
    def __init__(self, state_dir: Path) -> None:
        self.path = state_dir / "journal.json"

    def load(self) -> list[Entry]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return []
        except (OSError, ValueError):
            # A journal we cannot read is a crash in the middle of writing it, which os.replace makes
            # impossible; keep the evidence and start clean rather than block every command.
            self.path.replace(self.path.with_suffix(".corrupt"))
            return []
        return [
            Entry(
                txn=e["txn"],
                mutation=Mutation.from_json(e["mutation"]),
                command=e.get("command", ""),
                agent=e.get("agent"),
                state=e.get("state", STARTED),
                commit=e.get("commit"),
            )
            for e in data.get("entries", [])
        ]

    def save(self, entries: list[Entry]) -> None:
        if not entries:
            self.clear()
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        body = {
            "entries": [
                {
                    "txn": e.txn,
                    "mutation": e.mutation.to_json(),
                    "command": e.command,
                    "agent": e.agent,
                    "state": e.state,
                    "commit": e.commit,
                }
                for e in entries
            ]
        }
        write_atomic(self.path, json.dumps(body, indent=1).encode())

    def clear(self) -> None:
        self.path.unlink(missing_ok=True)
