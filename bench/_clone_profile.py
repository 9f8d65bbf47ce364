"""`_scale_driver.py` plus a profile of the transaction's steps (`MICHI_BENCH_CLONE_PROFILE=1 python
bench/run.py clones`, ADR 0015): each step's wall time, this process's CPU and its reaped children's
(git, and the remote's receive-pack under a local push), and the machine's CPU pressure (PSI "some": the
time at least one runnable task waited for a core) over it, appended as JSON lines to
MICHI_BENCH_PROFILE. Bench-only: it wraps methods by name and changes nothing they do."""

from __future__ import annotations

import functools
import json
import os
import time
from typing import Any

import _txn_timings

from michi import git
from michi.lock import RepoLock
from michi.workflow import group, journal, local, orphans, turn, txn

_spans: list[dict[str, Any]] = []
_depth = [0]


def _pressure() -> float:
    """Seconds (cumulative) during which some runnable task waited for a CPU."""
    try:
        with open("/proc/pressure/cpu") as f:
            return int(f.readline().rsplit("total=", 1)[1]) / 1e6
    except (OSError, IndexError, ValueError):
        return 0.0


def _wrap(owner: Any, name: str, label: str) -> None:
    inner = getattr(owner, name)

    @functools.wraps(inner)
    def timed(*args: Any, **kw: Any) -> Any:
        t0, c0, p0 = time.time(), os.times(), _pressure()
        _depth[0] += 1
        try:
            return inner(*args, **kw)
        finally:
            _depth[0] -= 1
            c1 = os.times()
            _spans.append(
                {
                    "step": label,
                    "depth": _depth[0],
                    "t0": t0,
                    "t1": time.time(),
                    "cpu": c1.user + c1.system - c0.user - c0.system,
                    "child": c1.children_user + c1.children_system - c0.children_user - c0.children_system,
                    "psi": _pressure() - p0,
                }
            )

    setattr(owner, name, timed)


for _name in (
    "_locked",
    "_online",
    "_fetch",
    "_prefetch",
    "_apply_all",
    "_push",
    "_finish",
    "_answer",
    "_between_rounds",
    "_back_off",
    "_send",
    "_beside",
    "_not_landed",
):
    _wrap(txn.Transaction, _name, _name.lstrip("_"))
_wrap(journal.Journal, "save", "journal.save")
_wrap(group, "take", "group.take")
_wrap(orphans, "settle", "orphans.settle")
_wrap(RepoLock, "ensure_held", "lock.ensure_held")
_wrap(RepoLock, "held", "lock.enter")  # the context manager's creation and first try (not its wait)
_wrap(turn.Turn, "wait", "turn.wait")
for _name in ("push", "fetch_branch", "prefetch_branch", "warm_up", "drop_prepared", "check_ahead"):
    _wrap(git, _name, "git." + _name)
_wrap(txn, "update_local", "update_local")
_wrap(local, "move_checkout", "move_checkout")

_started = time.time()
_boot = os.times()  # the interpreter's start-up and michi's imports so far
_txn_timings.install()

from michi.cli.main import main  # noqa: E402

try:
    code = main(__import__("sys").argv[1:])
finally:
    _end = os.times()
    with open(os.environ["MICHI_BENCH_PROFILE"], "a") as out:
        cpu = {
            "boot": _boot.user + _boot.system,
            "cpu": _end.user + _end.system,
            "child": _end.children_user + _end.children_system,
        }
        out.write(json.dumps({"started": _started, "ended": time.time(), "spans": _spans, **cpu}))
        out.write("\n")
from michi.serve.client import finish  # noqa: E402  # as `python -m michi` ends

raise SystemExit(finish(code))
