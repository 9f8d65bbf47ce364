"""Bench-only: every transaction this process runs appends its own timings (`outcome.timings`, and its
push attempts) as one JSON line to the file named by MICHI_BENCH_TIMINGS, read at the time it ends (a
served worker takes its caller's environment, ADR 0016). Wraps `Transaction.run`; changes nothing it does.
"""

from __future__ import annotations

import json
import os

from michi.workflow import txn


def install() -> None:
    run = txn.Transaction.run

    def timed(self: txn.Transaction, *args: object, **kw: object) -> txn.TxnOutcome:
        outcome = run(self, *args, **kw)  # type: ignore[arg-type]
        where = os.environ.get("MICHI_BENCH_TIMINGS")
        if where:
            with open(where, "a") as out:
                out.write(json.dumps({**outcome.timings, "attempts": outcome.attempts}) + "\n")
        return outcome

    txn.Transaction.run = timed  # type: ignore[method-assign]
