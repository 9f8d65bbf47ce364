"""The exactly-once invariant under random SIGKILLs and random refusals (ADR 0004).

Two clones take turns running real michi processes (adds and notes) against a remote whose pre-receive
hook is slow and refuses at random; some processes are SIGKILLed while their push waits in the hook,
some at a named fault point. One clone's remote half runs in its own session, as a server's does, so its
orphaned pushes may land after the next command took over. Bounded in count and time; the seed is
printed so a failure can be replayed (`MICHI_STRESS_SEED`).
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
from conftest import Remote, git
from txnkit import assert_exactly_once, detached_server

MAX_OPS = 36
MAX_SECONDS = 30.0  # the loop stops starting operations after this; the final syncs follow
FAULTS = ("locked", "fetched", "committed", "pushing", "pushed", "local")


def _hook(bare: Path, signals: Path) -> None:
    """Slow and refusing as `mode` says ("<refuse 0|1> <seconds>"); every push leaves `entered.<pid>`."""
    hook = bare / "hooks" / "pre-receive"
    hook.write_text(
        f"""#!/bin/sh
d='{signals}'
: > "$d/entered.$$"
read refuse delay < "$d/mode" || exit 0
sleep "$delay"
if [ "$refuse" = 1 ]; then echo "random refusal" >&2; exit 1; fi
"""
    )
    hook.chmod(0o755)


def _michi(cwd: Path, args: list[str], env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "michi", "--json", *args],
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **env},
    )


def _entered(signals: Path) -> int:
    return sum(1 for p in signals.iterdir() if p.name.startswith("entered."))


def _kill_in_hook(proc: subprocess.Popen[str], signals: Path, seen: int) -> None:
    deadline = time.monotonic() + 60
    while _entered(signals) <= seen and proc.poll() is None:
        assert time.monotonic() < deadline, "the push never reached the hook"
        time.sleep(0.005)
    if proc.poll() is None:
        proc.send_signal(signal.SIGKILL)


def _remote_tasks(bare: Path) -> list[dict[str, object]]:
    files = git(bare, "ls-tree", "-r", "--name-only", "main").split()
    return [
        json.loads(git(bare, "show", f"main:{f}"))
        for f in files
        if "/.tasks/" in f"/{f}" and f.endswith(".json")
    ]


@pytest.mark.slow
def test_kills_and_refusals_never_land_an_operation_twice(remote: Remote) -> None:
    seed = int(os.environ.get("MICHI_STRESS_SEED") or random.randrange(1 << 30))
    print(f"MICHI_STRESS_SEED={seed}")
    rnd = random.Random(seed)
    a, b = remote.clone("a"), remote.clone("b")
    detached_server(a, remote.root)
    for args in (["init"], ["task", "add", "seed 1"], ["task", "add", "seed 2"]):
        proc = _michi(a, args, {})
        assert proc.wait(timeout=60) == 0, proc.communicate()
    signals = remote.root / "signals"
    signals.mkdir()
    (signals / "mode").write_text("0 0\n")
    _hook(remote.bare, signals)

    outcome: dict[str, str] = {}  # label -> "ok" | "killed" | "refused"
    started = time.monotonic()
    count = 0
    while count < MAX_OPS and time.monotonic() - started < MAX_SECONDS:
        count += 1
        clone = rnd.choice([a, b])
        kind = rnd.choice(["add", "add", "note", "note", "sync"])
        label = f"{kind}-{count}"
        args = {
            "add": ["task", "add", label],
            "note": ["task", "annotate", str(rnd.choice([1, 2])), label],
            "sync": ["sync"],
        }[kind]
        refuse = rnd.random() < 0.35
        kill = rnd.choice(["none", "none", "hook", "fault"])
        (signals / "mode").write_text(f"{int(refuse)} {0.3 if kill == 'hook' else rnd.choice([0, 0.05])}\n")
        env = {"MICHI_ORPHAN_WAIT": rnd.choice(["0", "30"])}
        if kill == "fault":
            env["MICHI_FAULT"] = rnd.choice(FAULTS)
        seen = _entered(signals)
        proc = _michi(clone, args, env)
        if kill == "hook":
            _kill_in_hook(proc, signals, seen)
        out, err = proc.communicate(timeout=120)
        code = proc.returncode
        if code == -signal.SIGKILL:
            outcome[label] = "killed"
        elif code == 5 and "random refusal" in out + err:
            outcome[label] = "refused"
        else:
            assert code in (0, 4) if kind == "sync" else code == 0, (label, code, out, err)
            outcome[label] = "ok"

    (signals / "mode").write_text("0 0\n")
    for clone in (a, b, a):  # settle every orphan, finish every journal
        proc = _michi(clone, ["sync"], {})
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, (out, err)
    for clone in (a, b):
        assert not (clone / ".git/michi/journal.json").exists()

    assert_exactly_once(remote.bare)
    tasks = _remote_tasks(remote.bare)
    landed = Counter(str(t["description"]) for t in tasks)
    for t in tasks:
        landed.update(str(n["description"]) for n in t.get("annotations", []))  # type: ignore[attr-defined]
    for label, how in outcome.items():
        if label.startswith("sync"):
            continue
        # Exit 0 and SIGKILL (finished by a later command): exactly once. Refused: never.
        expected = 0 if how == "refused" else 1
        assert landed[label] == expected, (seed, label, how, landed[label])
    ids = [t["michi_id"] for t in tasks]
    assert len(ids) == len(set(ids)), f"duplicate ids: {sorted(ids)}"
    print(f"{count} operations in {time.monotonic() - started:.1f}s: {Counter(outcome.values())}")
