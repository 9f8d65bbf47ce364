"""`michi sync`: push pending offline work, fetch, bring the local task branch up to date."""

from __future__ import annotations

from michi.commands import task_common
from michi.results import Message
from michi.session import Session


def run(session: Session, *, wait: float | None) -> Message:
    from michi.workflow import TxnRequest, sync

    req = TxnRequest(
        repo=session.repo,
        config=session.with_overrides(lock_wait=wait),
        command=session.command_line,
        agent=session.resolve_agent(),
        on_wait=session.on_wait,
    )
    outcome = sync(req)
    info = task_common.txn_info(outcome)
    info["recovered"] = outcome.recovered
    if outcome.remote is None:
        text = "no remote: nothing to sync"
    elif outcome.recovered:
        text = f"synced {outcome.branch} with {outcome.remote}; pushed {outcome.recovered} pending change(s)"
    else:
        text = f"synced {outcome.branch} with {outcome.remote}"
    return Message(text, info)
