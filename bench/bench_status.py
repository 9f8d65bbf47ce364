"""`michi status --json` against `michi task list --json` on the same 10,000 tasks (ADR 0013): a status
must cost no more than a list. Also `status --check` and `michi stats` for reference.

`python bench/run.py status` (or MICHI_BENCH_TASKS=2000 for a quicker run).
"""

from __future__ import annotations

import os
import shutil
import statistics
import sys
from pathlib import Path

from _startup import MICHI, interpreter_note, prepared_env
from _util import isolated_git_env, row, sh, tempdir, timed
from bench_tasks import populated, timed_pair


def main() -> None:
    count = int(os.environ.get("MICHI_BENCH_TASKS", "10000"))
    root = tempdir("status")
    env = prepared_env(isolated_git_env(root))
    print(interpreter_note())
    try:
        work, _export = populated(root, env, count)
        for n in range(1, 6):  # a few live claims, as a swarm has
            sh([*MICHI, "--agent", f"agent-{n}", "task", "claim", str(n)], work, env)
        print(f"{count} tasks, 5 claims")
        list_cmd = [*MICHI, "--json", "task", "list"]
        status_cmd = [*MICHI, "--json", "status"]
        sh(list_cmd, work, env)  # both read the same caches: build them once
        listed, status = timed_pair(lambda: sh(list_cmd, work, env), lambda: sh(status_cmd, work, env), 11)
        print(row("michi task list --json (cache warm)", listed))
        print(row("michi status --json (cache warm)", status, listed))
        check = timed(lambda: sh([*MICHI, "--json", "status", "--check"], work, env, check=False), repeat=5)
        print(row("michi status --check --json", check, listed))
        human = timed(lambda: sh([*MICHI, "status"], work, env), repeat=5)
        print(row("michi status (rich)", human, listed))
        stats = timed(lambda: sh([*MICHI, "--json", "stats"], work, env), repeat=3)
        print(row("michi stats --json", stats, listed))
        ratio = statistics.median(status) / statistics.median(listed)
        print(f"status vs task list: {ratio:.2f}x ({'ok' if ratio <= 1.0 else 'SLOWER than task list'})")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    main()
