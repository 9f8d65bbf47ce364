"""Eight agents on one clone, ten `michi task add` each, against the serial raw-git limit (ADR 0010).

michi: 8 concurrent workers, each running `michi task add` 10 times in the same clone (every add is a
fresh process; the repo lock serialises the transactions). Baseline: the same 8 x 10 adds as the raw git
sequence under `flock` in another clone of another remote (`flock` serialises them: the most a clone can
do with plain git). Throughput = adds per second of wall time; goal: michi >= 0.8x the baseline. michi
runs in-process and with `michi server` running (ADR 0016), each with group commit (ADR 0017) and
without it (`MICHI_GROUP_COMMIT=false`). The runs alternate
(`MICHI_BENCH_AGENT_RUNS`, default 3) so machine load hits all alike.
`MICHI_BENCH_AGENTS` / `MICHI_BENCH_ADDS` change the 8 and the 10.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from _startup import MICHI, RAW_BODY, bare_with_clone, interpreter_note, michi_clone, prepared_env
from _util import isolated_git_env, tempdir, threads_elapsed


def _swarm(
    agents: int, adds: int, command: Callable[[int, int], list[str]], cwd: Path, env: dict[str, str]
) -> float:
    """Wall time for `agents` threads each running `adds` commands one after the other."""
    failures: list[str] = []

    def agent(a: int) -> None:
        for n in range(adds):
            proc = subprocess.run(command(a, n), cwd=cwd, env=env, capture_output=True, text=True)
            if proc.returncode != 0:
                failures.append(proc.stderr.strip() or proc.stdout.strip())

    elapsed = threads_elapsed(agents, agent)
    if failures:
        raise RuntimeError(f"{len(failures)} commands failed, first: {failures[0]}")
    return elapsed


def main() -> None:
    agents = int(os.environ.get("MICHI_BENCH_AGENTS", "8"))
    adds = int(os.environ.get("MICHI_BENCH_ADDS", "10"))
    runs = int(os.environ.get("MICHI_BENCH_AGENT_RUNS", "3"))
    root = tempdir("agents")
    env = prepared_env(isolated_git_env(root))
    raw = bare_with_clone(root, "raw", env)
    work = michi_clone(root, "michi", env, tasks=0)
    lock = str(root / "raw.flock")
    total = agents * adds

    def raw_add(run: int) -> Callable[[int, int], list[str]]:
        return lambda a, n: ["flock", lock, "bash", "-c", RAW_BODY, "raw", f"r{run}-{a}-{n}"]

    def michi_add(run: int) -> Callable[[int, int], list[str]]:
        return lambda a, n: [
            *MICHI,
            "--json",
            "task",
            "add",
            f"agent {a} task {n} run {run}",
            "--wait",
            "600",
        ]

    here = {**env, "MICHI_SERVER": "off"}
    served = {**env, "MICHI_SERVER_DIR": str(root / "srv")}
    solo = {"MICHI_GROUP_COMMIT": "false"}
    rates: dict[str, list[float]] = {
        "raw": [],
        "michi": [],
        "served": [],
        "michi_solo": [],
        "served_solo": [],
    }
    subprocess.run([*MICHI, "server", "start"], cwd=work, env=served, check=True, capture_output=True)
    try:
        for run in range(runs):
            rates["raw"].append(total / _swarm(agents, adds, raw_add(run), raw, env))
            rates["michi"].append(total / _swarm(agents, adds, michi_add(run), work, here))
            rates["served"].append(total / _swarm(agents, adds, michi_add(runs + run), work, served))
            rates["michi_solo"].append(
                total / _swarm(agents, adds, michi_add(2 * runs + run), work, {**here, **solo})
            )
            rates["served_solo"].append(
                total / _swarm(agents, adds, michi_add(3 * runs + run), work, {**served, **solo})
            )
    finally:
        subprocess.run([*MICHI, "server", "stop"], cwd=work, env=served, check=False, capture_output=True)
    print(interpreter_note())
    print(f"{agents} agents x {adds} adds on one clone, {runs} alternating runs (noisy on a busy machine)")
    raw_med = statistics.median(rates["raw"])
    print(f"raw git sequence, serial under flock  {raw_med:6.2f} adds/s  (runs: {_rates(rates['raw'])})")
    for name, label in (
        ("michi", "in-process"),
        ("served", "michi server running"),
        ("michi_solo", "in-process, no group"),
        ("served_solo", "served, no group"),
    ):
        med = statistics.median(rates[name])
        ratio = med / raw_med
        print(
            f"michi task add, {agents} agents, {label:<20} {med:6.2f} adds/s  (runs: {_rates(rates[name])})"
            f"  ratio {ratio:.2f}x  {'ok' if ratio >= 0.8 else 'MISSED'} (>= 0.8x)"
        )
    listed = subprocess.run(
        [*MICHI, "--json", "task", "list"], cwd=work, env=env, capture_output=True, text=True
    )
    landed = listed.stdout.count('"uuid"')
    print(f"tasks after the michi runs: {landed} (expected {4 * total * runs})")
    print(f"(workdir {root.name}: removed by the OS temp cleaner)")


def _rates(rates: list[float]) -> str:
    return ", ".join(f"{r:.2f}" for r in rates)


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    main()
