"""`michi migrate`: move every task file of every domain to the fan-out layout
(`<domain>/.tasks/<uuid[:2]>/<uuid>.json`) and mark the repository fan-out, as one transaction: one commit
made under the lock and pushed, touching only michi's files (ADR 0006). Running it again does nothing."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from michi.commands import task_common
from michi.results import Result
from michi.session import Session


@dataclass(frozen=True)
class Migrated(Result):
    moved: int  # task files moved by this run (0: nothing to do)
    layout: str
    txn: dict[str, Any]
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> Any:
        return {"moved": self.moved, "layout": self.layout, "transaction": self.txn}

    def summary(self) -> str:
        if self.txn["commit"] is None:
            return "nothing to migrate: every task file is in the fan-out layout already"
        text = f"moved {self.moved} task file(s) to the fan-out layout in one commit"
        return text if self.txn["pushed"] else text + " (committed locally: 'michi sync' pushes it)"


def run(session: Session, *, wait: float | None) -> Migrated:
    from michi.workflow import Mutation

    outcome = task_common.transact(session, Mutation("michi.tasks.migrate:to_fanout", {}), wait, False)
    result = outcome.result or {"moved": 0, "layout": "fanout"}
    info = task_common.txn_info(outcome)
    return Migrated(int(result["moved"]), str(result["layout"]), info, list(outcome.notes))
