"""Run every benchmark: `python bench/run.py` (or `python bench/run.py lock` for one)."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

SUITES = [
    "bench_lock",
    "bench_txn",
    "bench_tasks",
    "bench_hook",
    "bench_startup",
    "bench_agents",
    "bench_remote_lock",
    "bench_mcp",
    "bench_status",
    "bench_scale",
    "bench_clones",
]


def main(argv: list[str]) -> int:
    wanted = [s for s in SUITES if not argv or any(a.replace("-", "_") in s for a in argv)]
    for name in wanted:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name != name:
                raise
            print(f"== {name}: not present")
            continue
        print(f"== {name}")
        module.main()
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
