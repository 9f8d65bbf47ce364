"""The git transaction engine (ADR 0004): commands hand it a `Mutation`, it makes it land.

The names below load their module on first use (PEP 562): the read path imports `michi.workflow.snapshot`
only, and must not pay for the transaction's modules (ADR 0010).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from michi.lazy import attributes

if TYPE_CHECKING:
    from michi.workflow.mutation import ApplyContext, ApplyFn, Change, Mutation, TaskTree
    from michi.workflow.request import TxnOutcome, TxnRequest
    from michi.workflow.snapshot import Snapshot, read_snapshot
    from michi.workflow.txn import run_transaction, sync

_HOMES = {
    "ApplyContext": "mutation",
    "ApplyFn": "mutation",
    "Change": "mutation",
    "Mutation": "mutation",
    "TaskTree": "mutation",
    "TxnOutcome": "request",
    "TxnRequest": "request",
    "Snapshot": "snapshot",
    "read_snapshot": "snapshot",
    "run_transaction": "txn",
    "sync": "txn",
}

__all__ = [
    "ApplyContext",
    "ApplyFn",
    "Change",
    "Mutation",
    "Snapshot",
    "TaskTree",
    "TxnOutcome",
    "TxnRequest",
    "read_snapshot",
    "run_transaction",
    "sync",
]


__getattr__ = attributes(__name__, _HOMES, globals())
