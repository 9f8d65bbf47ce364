"""One michi CLI command in a fresh process, as `python -m michi` runs it, that also writes the
transaction's own timings (`outcome.timings`, and its push attempts) as JSON to the file named by
MICHI_BENCH_TIMINGS."""

from __future__ import annotations

import os
import sys

import _txn_timings

_txn_timings.install()

from michi.serve.client import finish, run_here  # noqa: E402  # as `python -m michi` runs and ends

try:
    code = run_here(sys.argv[1:])
finally:
    if os.environ.get("MICHI_BENCH_RSS"):
        import resource

        peak = max(
            resource.getrusage(who).ru_maxrss for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)
        )
        with open(os.environ["MICHI_BENCH_RSS"], "w") as out:
            out.write(f"{peak}\n")  # KiB on Linux: the largest of michi and the git processes it ran
raise SystemExit(finish(code))
