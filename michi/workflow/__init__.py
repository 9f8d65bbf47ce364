"""The git transaction engine (issue 3, ADR 0004): commands hand it a `Mutation`, it makes it land."""

from michi.workflow.mutation import ApplyContext, ApplyFn, Change, Mutation, TaskTree
from michi.workflow.request import TxnOutcome, TxnRequest
from michi.workflow.snapshot import Snapshot, read_snapshot
from michi.workflow.txn import run_transaction, sync

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
