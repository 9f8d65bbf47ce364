"""Eight agents on eight clones of one remote, at 100 and 50,000 tasks (ADR 0015).

`python bench/run.py clones`. Each agent runs `michi task add` in its own clone, one fresh process after
the other; the clones meet only on the remote (each clone's lock is its own: a push the remote refuses
because another clone pushed first is fetched, re-applied and pushed again inside the lock). Counted: the
operations, the remote's new task files (every add exactly once, by description and by the uuid the
command reported; ids distinct and above the repository's), the lock's hold (median, p95: the
transaction's own timings, as `bench_scale` reads them; a refused push lets the lock go between rounds,
ADR 0004, so "at once" is an operation's longest single hold and "in all" the sum of its rounds; the p95
"after each clone's first command" leaves out the swarm's start, where every clone's first command races
the others') and the pushes that had to be retried.
The repositories are `bench_scale`'s cached ones. `MICHI_BENCH_CLONE_SCALE` (default 100,50000),
`MICHI_BENCH_CLONE_AGENTS` (8), `MICHI_BENCH_CLONE_ADDS` (adds per agent; default 10 up to 10,000
tasks, 8 above: a p95 of 64 holds) and `MICHI_BENCH_CLONE_PAUSE` (an agent's mean pause between two
adds, one run per value: default 0,2) change the run. The clones' set-up is synced to disk before the
agents start. `MICHI_BENCH_CLONE_RETRIES` sets the agents' `push_retries`;
`MICHI_BENCH_CLONE_PROFILE=1` runs every command under `_clone_profile.py` and prints what the holds were
made of (`_clone_report.py`: steps, CPU, CPU pressure, the other clones' doings).
`MICHI_BENCH_CLONE_MODE=fresh,served` runs each agent's commands as fresh processes (the default,
`fresh`), then with michi's pre-loaded server running (ADR 0016: one for the user, serving all eight
clones; its workers write the same timings, `_served_server.py`), as agents on one machine can run them.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import _clone_report
from _startup import MICHI, interpreter_note, prepared_env
from _util import isolated_git_env, p95, sh, tempdir, threads_elapsed, wait_for
from bench_scale import DRIVER, HERE, PYTHON, build

# `MICHI_BENCH_CLONE_PROFILE=1`: every command also writes its steps' timings (`_clone_profile.py`)
PROFILE = os.environ.get("MICHI_BENCH_CLONE_PROFILE") == "1"
COMMAND = [PYTHON, str(HERE / "_clone_profile.py")] if PROFILE else DRIVER


def _clones(cached: Path, root: Path, agents: int, env: dict[str, str]) -> list[Path]:
    """A copy of the cached remote and `agents` clones of it, their caches warm (built once, copied)."""
    sh(["git", "clone", "-q", "--bare", str(cached / "origin.git"), "origin.git"], root, env)
    works = []
    for a in range(agents):
        sh(["git", "clone", "-q", "origin.git", f"w{a}"], root, env)
        works.append(root / f"w{a}")
    sh([*MICHI, "--json", "task", "list"], works[0], env)
    for work in works[1:]:
        (work / ".git" / "michi").mkdir(exist_ok=True)
        for cache in (works[0] / ".git" / "michi").glob("task-*"):  # every task cache, by whatever name
            shutil.copy2(cache, work / ".git" / "michi" / cache.name)
    return works


def _serving(root: Path, env: dict[str, str]) -> tuple[subprocess.Popen[bytes], dict[str, str]]:
    """michi's server for the swarm, in a folder of its own, and the environment its clients use."""
    served = {**env, "MICHI_SERVER_DIR": str(root / "srv")}
    server = subprocess.Popen(
        [PYTHON, str(HERE / "_served_server.py")],
        cwd=root,
        env=served,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    wait_for(lambda: any((root / "srv").glob("s-*.json")) or server.poll() is not None, 60)
    if not any((root / "srv").glob("s-*.json")):
        server.kill()
        raise SystemExit(f"bench: michi's server did not start (exit {server.wait()})")
    return server, served


def _swarm(
    works: list[Path], adds: int, pause: float, env: dict[str, str], root: Path, command: list[str]
) -> tuple[float, dict[str, str]]:
    """Every agent's adds in its own clone at once, each after a random pause of 0 to 2 x `pause` seconds
    (an agent's work between two operations; 0: back to back, every clone always pushing); returns the
    wall time and uuid -> description."""
    reported: dict[str, str] = {}
    failures: list[str] = []

    def agent(a: int) -> None:
        mine = {**env, "MICHI_BENCH_TIMINGS": str(root / f"t{a}.jsonl"), "MICHI_AGENT": f"agent{a}"}
        mine["MICHI_BENCH_PROFILE"] = str(root / f"p{a}.jsonl")
        if os.environ.get("MICHI_BENCH_CLONE_RETRIES"):  # refused pushes before a clone takes its turn
            mine["MICHI_PUSH_RETRIES"] = os.environ["MICHI_BENCH_CLONE_RETRIES"]
        rng = random.Random(a)
        for n in range(adds):
            time.sleep(rng.uniform(0, 2 * pause))
            what = f"agent {a} op {n}"
            proc = subprocess.run(
                [*command, "--json", "task", "add", what],
                cwd=works[a],
                env=mine,
                capture_output=True,
                text=True,
            )
            if proc.returncode != 0:
                failures.append(proc.stderr.strip() or proc.stdout.strip())
                continue
            reported[json.loads(proc.stdout)["uuid"]] = what

    elapsed = threads_elapsed(len(works), agent)
    for failure in failures[:3]:
        print(f"  an add failed: {failure[:300]}")
    return elapsed, reported


def _landed(bare: Path, base: str, env: dict[str, str]) -> list[dict[str, object]]:
    """The task files the remote's branch gained since `base`, decoded."""
    out = sh(["git", "diff-tree", "-r", "-z", "--no-renames", "--diff-filter=A", base, "main"], bare, env)
    fields = out.split("\0")
    oids = [
        meta.split(" ")[3]
        for meta, path in zip(fields[0::2], fields[1::2], strict=False)
        if "/.tasks/" in f"/{path}"
    ]
    batch = subprocess.run(
        ["git", "cat-file", "--batch"],
        cwd=bare,
        env=env,
        input="".join(o + "\n" for o in oids).encode(),
        capture_output=True,
        check=True,
    ).stdout
    tasks, at = [], 0
    while at < len(batch):
        header_end = batch.index(b"\n", at)
        size = int(batch[at:header_end].split()[2])
        tasks.append(json.loads(batch[header_end + 1 : header_end + 1 + size]))
        at = header_end + 1 + size + 1
    return tasks


def run_size(
    count: int, agents: int, adds: int, pause: float, env: dict[str, str], mode: str
) -> dict[str, Any]:
    cached = build(count, env, None)
    root = tempdir(f"clones-{count}")
    server = None
    try:
        works = _clones(cached, root, agents, env)
        base = sh(["git", "rev-parse", "main"], root / "origin.git", env).strip()
        command = COMMAND
        if mode == "served":
            server, env = _serving(root, env)
            command = MICHI  # the client, as `michi` runs it: the server's worker runs the command
        # The set-up's writes (eight checkouts of up to 50,000 files) reach the disk now, not during the
        # first holds: agents start on clones made earlier, not ones still being written back.
        os.sync()
        elapsed, reported = _swarm(works, adds, pause, env, root, command)
        landed = _landed(root / "origin.git", base, env)
        timings = [
            json.loads(line)
            for a in range(agents)
            for line in (root / f"t{a}.jsonl").read_text().splitlines()
        ]
        expected = {f"agent {a} op {n}" for a in range(agents) for n in range(adds)}
        described = [str(t["description"]) for t in landed]
        ids = [int(str(t["michi_id"])) for t in landed]
        failed = {f"agent {a} op {n}" for a in range(agents) for n in range(adds)} - set(reported.values())
        expected -= failed  # a command that failed said so; it must not have landed either
        ok = (
            len(landed) == len(expected)
            and set(described) == expected
            and len(set(described)) == len(described)
            and {str(t["uuid"]): str(t["description"]) for t in landed} == reported
            and len(set(ids)) == len(ids)
            and min(ids) > count
        )
        holds = [t.get("lock_hold_max", t["lock_hold"]) for t in timings]
        # Each clone's first command races the others' (none was refused lately, ADR 0004): the swarm's
        # start. The holds after it are the steady state.
        later = [
            t.get("lock_hold_max", t["lock_hold"])
            for a in range(agents)
            for t in [json.loads(line) for line in (root / f"t{a}.jsonl").read_text().splitlines()][1:]
        ]
        summed = [t["lock_hold"] for t in timings]
        once = [t["lock_hold"] for t in timings if t.get("attempts", 1) == 1] or [0.0]
        return {
            "ops": len(timings),
            "failed": len(failed),
            "landed": len(landed),
            "ok": float(ok),
            "wall": elapsed,
            "hold_med": statistics.median(holds) * 1000,
            "hold_p95": p95(holds) * 1000,
            "hold_max": max(holds) * 1000,
            "later_p95": p95(later or [0.0]) * 1000,
            "sum_med": statistics.median(summed) * 1000,
            "sum_p95": p95(summed) * 1000,
            "total_med": statistics.median(t["total"] for t in timings) * 1000,
            "retried": sum(1 for t in timings if t.get("attempts", 1) > 1),
            "attempts_max": max(t.get("attempts", 1) for t in timings),
            "once_med": statistics.median(once) * 1000,
            "profile": "\n".join(_clone_report.report(root, agents)) if PROFILE else "",
        }
    finally:
        if server is not None:
            server.terminate()  # as `michi server stop`: SIGTERM, running commands finish first
            try:
                server.wait(timeout=60)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()
        shutil.rmtree(root, ignore_errors=True)


def main() -> None:
    sizes = [int(s) for s in os.environ.get("MICHI_BENCH_CLONE_SCALE", "100,50000").split(",")]
    agents = int(os.environ.get("MICHI_BENCH_CLONE_AGENTS", "8"))
    pauses = [float(p) for p in os.environ.get("MICHI_BENCH_CLONE_PAUSE", "0,2").split(",")]
    modes = os.environ.get("MICHI_BENCH_CLONE_MODE", "fresh").split(",")
    assert set(modes) <= {"fresh", "served"}, modes
    assert not (PROFILE and "served" in modes), "the profile wraps fresh processes only"
    env = prepared_env(isolated_git_env(tempdir("home")))
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # users have bytecode
    print(interpreter_note())
    for n in sizes:
        adds = int(os.environ.get("MICHI_BENCH_CLONE_ADDS", "10" if n <= 10_000 else "8"))
        for mode, pause in [(m, p) for m in modes for p in pauses]:
            r = run_size(n, agents, adds, pause, env, mode)
            verdict = "none lost or duplicated" if r["ok"] else "LOST OR DUPLICATED"
            print(
                f"{n:,} tasks, {agents} agents x {adds} adds on {agents} clones, pause {pause:g} s, {mode}: "
                f"{r['ops']:.0f} ops ({r['failed']:.0f} failed) in {r['wall']:.1f} s "
                f"({r['ops'] / r['wall']:.2f}/s), "
                f"{r['landed']:.0f} new tasks on the remote, {verdict}; lock held at once median "
                f"{r['hold_med']:.0f} ms, p95 {r['hold_p95']:.0f} ms, max {r['hold_max']:.0f} ms "
                f"(in all: median {r['sum_med']:.0f} ms, p95 {r['sum_p95']:.0f} ms; at once after each "
                f"clone's first command: p95 {r['later_p95']:.0f} ms); "
                f"command median {r['total_med']:.0f} ms; {r['retried']:.0f} ops pushed more than "
                f"once (at most {r['attempts_max']:.0f} times); held median {r['once_med']:.0f} ms "
                "when the first push landed"
            )
            if r["profile"]:
                print(r["profile"])
    load = os.getloadavg()
    print(f"(machine load: {load[0]:.1f} {load[1]:.1f} {load[2]:.1f})")


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    main()
