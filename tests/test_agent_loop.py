"""The guide's work loop, run by two agents as real processes on two clones until `open: 0`.

Each agent does only what `michi guide` teaches: `next --claim`; on success work and `done`; on
`no_ready_task` stop when `open` is 0, else ask again. Dependencies make one agent meet "work remains,
held by the other" along the way, so both branches of the loop run.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import run_michi

# Waits for "go" on stdin (a start barrier), then runs the guide's loop with michi's own entry point.
AGENT = """
import contextlib, io, json, sys, time
from michi.cli.main import main

def michi(*args):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(["--json", *args])
    return code, json.loads(out.getvalue())

sys.stdin.readline()
log = []
for _ in range(400):  # bounded: the loop must end by itself long before this
    code, got = michi("task", "next", "--claim", "--wait", "60")
    if code == 0:
        done_code, done = michi("task", "done", str(got["id"]), "--wait", "60")
        log.append(["done", got["id"], done_code, done.get("state")])
        continue
    assert code == 3 and got["error"]["code"] == "no_ready_task", got
    if got["error"]["open"] == 0:
        log.append(["stop", got["error"]])
        break
    log.append(["wait", got["error"]["open"]])
    time.sleep(0.05)  # the guide says: wait, then ask again (polling the remote, not timing a race)
print(json.dumps(log))
"""


@pytest.mark.slow
def test_two_agents_follow_the_guide_until_open_is_zero(remote) -> None:
    dev = remote.clone("dev")
    assert run_michi(dev, "init").exit_code == 0
    specs = [  # a chain 1 <- 2 <- 4 <- 5: whoever holds a link makes the other agent wait (or finish)
        ("a",),
        ("b", "--depends", "1"),
        ("c", "-p", "H"),
        ("d", "--depends", "2"),
        ("e", "--depends", "4"),
        ("f", "-p", "L"),
    ]
    for spec in specs:
        assert run_michi(dev, "task", "add", *spec).exit_code == 0
    clones = [remote.clone("agent-1"), remote.clone("agent-2")]
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", AGENT],
            cwd=clone,
            env={**os.environ, "MICHI_AGENT": clone.name},
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for clone in clones
    ]
    for p in procs:
        assert p.stdin is not None
        p.stdin.write("go\n")
        p.stdin.flush()
    outs = [p.communicate(timeout=300) for p in procs]
    assert all(p.returncode == 0 for p in procs), outs
    logs = [json.loads(out) for out, _err in outs]
    finished = [entry[1] for log in logs for entry in log if entry[0] == "done"]
    assert sorted(finished) == [1, 2, 3, 4, 5, 6]  # every task done once: none twice, none lost
    assert all(entry[2:] == [0, "done"] for log in logs for entry in log if entry[0] == "done")
    for log in logs:  # both stopped on open: 0, and only then
        assert log[-1][0] == "stop" and log[-1][1]["open"] == 0
    final = run_michi(dev, "task", "list", "--state", "any", "--fetch", "--json").json()
    assert {t["state"] for t in final} == {"done"} and len(final) == 6
    history = run_michi(dev, "task", "log", "4", "--json").json()["entries"]
    claims = [e for e in history if e["command"].startswith("task claim")]
    assert len(claims) == 1 and claims[0]["agent"] in {"agent-1", "agent-2"}


def test_the_readme_loop_runs_as_written(remote) -> None:
    readme = (Path(__file__).parent.parent / "README.md").read_text(encoding="utf-8")
    after = readme.split("The agent's loop (`michi guide`):", 1)[1]
    snippet = after.split("```sh\n", 1)[1].split("```", 1)[0]
    clone = remote.clone("loop")
    assert run_michi(clone, "init").exit_code == 0
    for name in ("one", "two"):
        assert run_michi(clone, "task", "add", name).exit_code == 0
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    proc = subprocess.run(
        ["bash", "-c", snippet], cwd=clone, env=env, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    final = run_michi(clone, "task", "list", "--state", "any", "--json").json()
    assert [(t["state"], t["assignee"]) for t in final] == [("done", "agent-1"), ("done", "agent-1")]
