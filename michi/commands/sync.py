"""`michi sync`: push pending offline work, fetch, bring the local task branch up to date, and say what
became of every pending operation (ADR 0004)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from michi.commands import task_common
from michi.errors import ExitCode
from michi.results import Result
from michi.session import Session


@dataclass(frozen=True)
class Synced(Result):
    """The sync's sentence and transaction, plus what became of the pending operations: `recovered` of
    them are on the remote now; `refused` ones were dropped (exit 4); `renumbered` offline-added tasks
    got a new id because another clone took theirs."""

    text: str
    txn: dict[str, Any]
    recovered: int
    refused: list[dict[str, Any]]
    renumbered: list[dict[str, Any]]
    details: list[str]  # one line per refused or renumbered operation, for people
    notes: list[str] = field(default_factory=list)

    @property
    def exit_code(self) -> int:  # type: ignore[override]  # a refused pending operation is a conflict
        return int(ExitCode.CONFLICT) if self.refused else 0

    def to_json(self) -> Any:
        return {
            "message": self.text,
            **self.txn,
            "recovered": self.recovered,
            "refused": self.refused,
            "renumbered": self.renumbered,
        }

    def summary(self) -> str:
        return "\n".join([self.text, *(f"  {line}" for line in self.details)])


def run(session: Session, *, wait: float | None) -> Synced:
    from michi.workflow import TxnRequest, recovery, sync

    req = TxnRequest(
        repo=session.repo,
        config=task_common.lock_config(session, wait),
        command=session.command_line,
        agent=session.resolve_agent(),
        on_wait=session.on_wait,
    )
    outcome = sync(req)
    details = recovery.describe(outcome.refused, outcome.renumbered)
    info = task_common.txn_info(outcome)
    info["notes"] = [n for n in outcome.notes if n not in details]
    if outcome.remote is None:
        text = "no remote: nothing to sync"
    else:
        text = f"synced {outcome.branch} with {outcome.remote}"
        applied = outcome.recovered - outcome.landed_before
        if applied:
            text += f"; pushed {applied} pending change(s)"
        if outcome.landed_before:
            text += f"; {outcome.landed_before} interrupted change(s) had already landed"
        if outcome.refused:
            text += f"; {len(outcome.refused)} pending change(s) could not be applied"
        if outcome.renumbered:
            text += f"; {len(outcome.renumbered)} task(s) renumbered"
    return Synced(text, info, outcome.recovered, outcome.refused, outcome.renumbered, details, info["notes"])
