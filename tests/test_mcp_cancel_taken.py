"""`michi mcp`: a call cancelled while it waits for the repo lock, whose offer the lock's holder takes
between the cancellation and the withdrawal (ADR 0011, 0017). The operation lands anyway, so the call
answers with its real outcome, the task it added, whatever the timing of the cancel."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import Remote, git, run_michi, spawn_michi
from mcpkit import Wire, document, initialised
from txnkit import assert_exactly_once

pytest.importorskip("mcp")


@pytest.fixture
def work(remote: Remote, cli) -> Path:
    return initialised(remote, cli)


def stopped(pid: int) -> bool:
    """Whether process `pid` is stopped (SIGSTOP): the state after the command name in /proc's stat."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    return stat[stat.rindex(")") + 2] == "T"


def until(done: Callable[[], bool], proc: subprocess.Popen[bytes] | subprocess.Popen[str]) -> None:
    """Wait for `done`, failing at once if `proc` ended first (or after a minute)."""
    deadline = time.monotonic() + 60
    while not done():
        assert proc.poll() is None, f"{proc.args} ended first ({proc.returncode})"
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def offers(repo: Path) -> int:
    return len(list((repo / ".git/michi/group").glob("*.offer")))


def test_a_cancelled_call_whose_offer_is_taken_before_it_is_withdrawn_answers_with_its_task(
    remote: Remote, work: Path
) -> None:
    """The server stops (a fault point) right after the cancellation ended the call's wait and before it
    withdraws its offer; meanwhile the CLI add that holds the lock next takes the offer, lands it and
    answers. The call was answered `interrupted` ("lands anyway"), without the task: the agent never
    learnt which task it had added, and might add it again. It answers with the task, added once."""
    from lockkit import new_lock

    holder = new_lock(work, ttl=300)
    holder.acquire(0)
    wire = Wire(work, env={"MICHI_FAULT": "withdrawing:SIGSTOP"})
    adder = None
    try:
        wire.call(2, "task_add", progress="p", description="cancelled as it was taken", wait=600)
        wire.until(lambda r: r.get("method") == "notifications/progress")  # its offer is posted
        adder = spawn_michi(work, "--json", "task", "add", "by the cli", "--wait", "600")
        until(lambda: offers(work) == 2, adder)
        wire.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 2}})
        until(lambda: stopped(wire.proc.pid), wire.proc)  # about to withdraw its offer
        holder.release()
        out, err = adder.communicate(timeout=120)  # it took the server's offer and landed both
        assert adder.returncode == 0, err
        assert offers(work) == 0 and list((work / ".git/michi/group").glob("*.answer"))
        wire.proc.send_signal(signal.SIGCONT)
        is_error, added = document(wire.answer(2))
    finally:
        holder.release()  # (once released, nothing)
        os.kill(wire.proc.pid, signal.SIGCONT)
        wire.end()
        wire.kill()
        if adder is not None and adder.poll() is None:
            adder.kill()
    assert json.loads(out)["description"] == "by the cli"
    assert not is_error, added
    assert added["description"] == "cancelled as it was taken" and added["transaction"]["pushed"], added
    listed = run_michi(work, "--json", "task", "list", "--fetch").json()
    assert sorted(t["description"] for t in listed) == ["by the cli", "cancelled as it was taken"]
    assert {t["id"] for t in listed if t["description"] != "by the cli"} == {added["id"]}
    assert git(remote.bare, "log", "--format=%B", "main").count(f"Michi-Task: {added['uuid']}") == 1
    assert_exactly_once(remote.bare)
