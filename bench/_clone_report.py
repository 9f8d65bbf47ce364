"""What the lock's holds were made of, from `_clone_profile.py`'s spans (ADR 0015): per hold (one round
under one clone's lock) its steps' wall time, the CPU its process and reaped children used, the machine's
CPU pressure over it, and what the other clones' commands were doing meanwhile."""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any

# The steps a round under the lock is made of, as `_clone_profile.py` names them (disjoint in time).
STEPS = (
    "fetch",
    "apply_all",
    "journal.save",
    "group.take",
    "orphans.settle",
    "lock.ensure_held",
    "git.push",
    "git.drop_prepared",  # after a refused push: the checkout move's processes started beside it
    "finish",
    "answer",
)


def _phase(proc: dict[str, Any], at: float) -> str:
    """What a command was doing at `at`: start-up (before its first step), holding, or a pre-lock step."""
    spans = proc["spans"]
    if not spans or at < min(s["t0"] for s in spans):
        return "start-up"
    for s in spans:
        if s["step"] == "locked" and s["t0"] <= at <= s["t1"]:
            return "holding"
    inside = [s for s in spans if s["t0"] <= at <= s["t1"] and s["step"] != "locked"]
    if inside:
        return min(inside, key=lambda s: s["t1"] - s["t0"])["step"]
    return "other"


def report(root: Path, agents: int) -> list[str]:
    procs = [
        json.loads(line) for a in range(agents) for line in (root / f"p{a}.jsonl").read_text().splitlines()
    ]
    holds: list[dict[str, Any]] = []
    for i, proc in enumerate(procs):
        rounds = sorted((s for s in proc["spans"] if s["step"] == "locked"), key=lambda s: s["t0"])
        for n, r in enumerate(rounds):
            inner = [s for s in proc["spans"] if r["t0"] <= s["t0"] and s["t1"] <= r["t1"]]
            # steps inside others (the move's drop in `finish`, the save naming the push in `git.push`)
            # are counted there
            nested = {"git.drop_prepared", "journal.save"}
            inner = [s for s in inner if s["step"] not in nested or s["depth"] <= r["depth"] + 2]
            parts = {k: sum(s["t1"] - s["t0"] for s in inner if s["step"] == k) for k in STEPS}
            wall = r["t1"] - r["t0"]
            parts["other"] = wall - sum(parts.values())
            used = {k: sum(s["cpu"] + s["child"] for s in inner if s["step"] == k) for k in STEPS}
            mid = (r["t0"] + r["t1"]) / 2
            alive = [p for j, p in enumerate(procs) if j != i and p["started"] <= mid <= p["ended"]]
            others = [_phase(p, mid) for p in alive]
            holds.append(
                {
                    "wall": wall,
                    "at": r["t0"],
                    "landed": n == len(rounds) - 1,
                    "cpu": r["cpu"],
                    "child": r["child"],
                    "psi": r["psi"],
                    "parts": parts,
                    "used": used,
                    "others": others,
                }
            )
    holds.sort(key=lambda h: h["wall"])
    begun = min(p["started"] for p in procs)
    cut = holds[int(0.9 * len(holds)) :]  # the slowest tenth: what the p95 is made of
    low = holds[: len(holds) // 2]
    lines = []
    for name, group in (("fastest half", low), ("slowest tenth", cut), ("all", holds)):
        ms = lambda v: f"{v * 1000:.0f}"  # noqa: E731
        parts = {k: statistics.mean(h["parts"][k] for h in group) for k in (*STEPS, "other")}
        used = {k: statistics.mean(h["used"][k] for h in group) for k in STEPS}
        shown = ", ".join(
            f"{k} {ms(v)}" + (f" (CPU {ms(used[k])})" if used.get(k, 0) >= 0.001 else "")
            for k, v in parts.items()
            if v >= 0.002
        )
        phases: dict[str, float] = {}
        for h in group:
            for ph in h["others"]:
                phases[ph] = phases.get(ph, 0) + 1 / len(group)
        busy = ", ".join(f"{k} {v:.1f}" for k, v in sorted(phases.items(), key=lambda kv: -kv[1]) if v >= 0.1)
        lines.append(
            f"  {name}: {len(group)} holds ({sum(h['landed'] for h in group)} landed), wall mean "
            f"{ms(statistics.mean(h['wall'] for h in group))} ms (min {ms(group[0]['wall'])}, max "
            f"{ms(group[-1]['wall'])}); CPU own {ms(statistics.mean(h['cpu'] for h in group))} + children "
            f"{ms(statistics.mean(h['child'] for h in group))} ms; CPU pressure (PSI some) "
            f"{ms(statistics.mean(h['psi'] for h in group))} ms; steps (ms): {shown}; other clones' "
            f"commands meanwhile: {busy}"
            + (
                "; began at (s into the swarm) " + ", ".join(f"{h['at'] - begun:.1f}" for h in group)
                if group is cut
                else ""
            )
        )
    # Where the machine's CPU went, over every command (nested steps are inside their callers' figures).
    total = sum(p["cpu"] + p["child"] for p in procs)
    cpu: dict[str, float] = {}
    calls: dict[str, int] = {}
    for p in procs:
        for s in p["spans"]:
            cpu[s["step"]] = cpu.get(s["step"], 0) + s["cpu"] + s["child"]
            calls[s["step"]] = calls.get(s["step"], 0) + 1
    boot = sum(p["boot"] for p in procs)
    shown = ", ".join(
        f"{k} {v:.1f} ({calls[k]} calls)" for k, v in sorted(cpu.items(), key=lambda kv: -kv[1]) if v >= 0.2
    )
    lines.append(
        f"  CPU of the {len(procs)} commands: {total:.1f} s ({total / len(procs) * 1000:.0f} ms each), of it "
        f"interpreter and imports before the driver ran {boot:.1f} s; by step (s): {shown}"
    )
    return lines
