"""The exactly-once invariant under random SIGKILLs and random refusals (ADR 0004).

Two clones run real michi processes (adds and notes) side by side, so their pushes race, against a
remote whose pre-receive hook is slow and refuses at random; some processes are SIGKILLed while their
push waits in the hook, some at a named fault point. One clone's remote half runs in its own session, as
a server's does, so its orphaned pushes may land after the next command took over. Bounded in count and
time. The seed (printed; `MICHI_STRESS_SEED` replays it) fixes the choices, not the timing.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import pytest
from conftest import Remote, git
from txnkit import assert_exactly_once, detached_server

MAX_OPS = 36
MAX_SECONDS = 30.0  # the loop stops starting operations after this; the final syncs follow
FAULTS = ("locked", "fetched", "spawned", "committed", "pushing", "pushed", "local")


def _hook(bare: Path, signals: Path) -> None:
    """Slow and refusing as the pushing michi's environment says (the remote's half inherits it):
    STRESS_DELAY seconds, STRESS_REFUSE=1; each push of the branch leaves `entered.<STRESS_LABEL>.<pid>`.
    A push of the turn alone (`refs/michi/turn/*`, ADR 0004) passes: it is made between two rounds,
    without the lock and with nothing journaled (a refused round's entry is dropped), so a command
    killed there did nothing, as one killed before its lock; killing it there is no test of recovery."""
    hook = bare / "hooks" / "pre-receive"
    hook.write_text(
        f"""#!/bin/sh
branch=
while read -r old new ref; do case "$ref" in refs/heads/*) branch=1 ;; esac; done
[ -n "$branch" ] || exit 0
: > '{signals}'/"entered.${{STRESS_LABEL:-none}}.$$"
[ -e '{signals}/calm' ] && exit 0
sleep "${{STRESS_DELAY:-0}}"
if [ "${{STRESS_REFUSE:-0}}" = 1 ]; then echo "random refusal" >&2; exit 1; fi
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


def _kill_in_hook(proc: subprocess.Popen[str], signals: Path, label: str) -> None:
    """SIGKILL `proc` once one of its pushes waits in the hook (or let it be, if it ended first)."""
    deadline = time.monotonic() + 60
    while not any(signals.glob(f"entered.{label}.*")) and proc.poll() is None:
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
    _hook(remote.bare, signals)

    outcome: dict[str, str] = {}  # label -> "ok" | "killed" | "refused"
    failures: list[object] = []
    started = time.monotonic()
    numbers = iter(range(1, MAX_OPS + 1))
    guard = threading.Lock()

    def stream(clone: Path, rnd: random.Random) -> None:
        """One clone's operations, one after another; the other clone's stream races it."""
        while time.monotonic() - started < MAX_SECONDS:
            with guard:
                count = next(numbers, None)
            if count is None:
                return
            kind = rnd.choice(["add", "add", "note", "note", "sync"])
            label = f"{kind}-{count}"
            args = {
                "add": ["task", "add", label],
                "note": ["task", "annotate", str(rnd.choice([1, 2])), label],
                "sync": ["sync"],
            }[kind]
            kill = rnd.choice(["none", "none", "hook", "fault"])
            env = {
                "STRESS_LABEL": label,
                "STRESS_REFUSE": str(int(rnd.random() < 0.35)),
                "STRESS_DELAY": "0.3" if kill == "hook" else rnd.choice(["0", "0.05"]),
                "MICHI_ORPHAN_WAIT": rnd.choice(["0", "30"]),
            }
            if kill == "fault":
                env["MICHI_FAULT"] = rnd.choice(FAULTS)
            proc = _michi(clone, args, env)
            if kill == "hook":
                _kill_in_hook(proc, signals, label)
            out, err = proc.communicate(timeout=120)
            code = proc.returncode
            if code == -signal.SIGKILL:
                outcome[label] = "killed"
            elif code == 5 and "random refusal" in out + err:
                outcome[label] = "refused"
            elif code == 0 or (kind == "sync" and code == 4):
                outcome[label] = "ok"
            else:
                failures.append((label, code, out, err))
                return

    streams = [threading.Thread(target=stream, args=(clone, random.Random(rnd.random()))) for clone in (a, b)]
    for t in streams:
        t.start()
    for t in streams:
        t.join(timeout=300)
    assert not failures, (seed, failures)
    count = len(outcome)

    (signals / "calm").touch()
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
