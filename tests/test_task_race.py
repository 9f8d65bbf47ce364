"""Agents on two clones racing, as real processes: `next --claim` and `add` against one origin."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import run_michi

# Each worker waits for "go" on stdin (a start barrier, no sleeps), then runs michi in a loop in-process.
WORKER = """
import io, json, sys, contextlib
from michi.cli.main import main
mode, count = sys.argv[1], int(sys.argv[2])
sys.stdin.readline()
results = []
for i in range(count):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        args = ["task", "next", "--claim"] if mode == "claim" else ["task", "add", f"task {sys.argv[3]}-{i}"]
        code = main(["--json", *args, "--wait", "60"])
    results.append([code, json.loads(out.getvalue())])
    if mode == "claim" and code == 3:
        break
print(json.dumps(results))
"""


def _workers(clones: list[Path], mode: str, count: int) -> list[list[list[object]]]:
    procs = []
    for n, clone in enumerate(clones):
        env = {**os.environ, "MICHI_AGENT": f"agent-{n}"}
        cmd = [sys.executable, "-c", WORKER, mode, str(count), str(n)]
        procs.append(
            subprocess.Popen(
                cmd, cwd=clone, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
            )
        )
    for p in procs:
        assert p.stdin is not None
        p.stdin.write("go\n")
        p.stdin.flush()
    outs = [p.communicate(timeout=180)[0] for p in procs]
    assert all(p.returncode == 0 for p in procs), outs
    return [json.loads(o) for o in outs]


@pytest.mark.slow
def test_two_clones_racing_next_claim_no_double_no_skip(remote, cli) -> None:
    first = remote.clone("a")
    assert cli(first, "init").exit_code == 0  # the setup runs in-process; the race below does not
    for i in range(6):
        assert cli(first, "task", "add", f"t{i}", "--json").exit_code == 0
    clones = [first, remote.clone("b"), first, remote.clone("c")]
    results = _workers(clones, "claim", 10)
    claimed = [(r[1]["id"], r[1]["assignee"]) for worker in results for r in worker if r[0] == 0]
    ids = sorted(i for i, _ in claimed)
    assert ids == [1, 2, 3, 4, 5, 6], claimed
    assert all(worker[-1][0] == 3 and worker[-1][1]["error"]["code"] == "no_ready_task" for worker in results)
    listed = run_michi(first, "task", "list", "--fetch", "--json").json()
    assert {t["id"]: t["assignee"] for t in listed} == dict(claimed)


@pytest.mark.slow
def test_two_clones_racing_add_get_unique_ids(remote, cli) -> None:
    first = remote.clone("a")
    assert cli(first, "init").exit_code == 0
    results = _workers([first, remote.clone("b")], "add", 4)
    ids = sorted(r[1]["id"] for worker in results for r in worker if r[0] == 0)
    assert ids == list(range(1, 9))
    listed = run_michi(first, "task", "list", "--fetch", "--json").json()
    assert sorted(t["id"] for t in listed) == ids
