"""`michi mcp` asked to stop (a signal, or its client gone) while calls run: what may have changed
something is answered, what only waited is withdrawn, and the server ends quietly (ADR 0011)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import Remote, git, run_michi
from mcpkit import HELLO, Wire, document, initialised

pytest.importorskip("mcp")


@pytest.fixture
def work(remote: Remote, cli) -> Path:
    return initialised(remote, cli)


def until_exists(path: Path, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.02)


def hold_pushes(remote: Remote) -> tuple[Path, Path]:
    """A pre-receive hook that says a push reached the remote (`started`) and waits for `go`."""
    started, go = remote.root / "push-started", remote.root / "push-go"
    hook = remote.bare / "hooks" / "pre-receive"
    hook.write_text(f"#!/bin/sh\ntouch {started}\nwhile [ ! -e {go} ]; do sleep 0.05; done\n")
    hook.chmod(0o755)
    return started, go


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP])
def test_a_signal_while_a_call_pushes_lets_it_land_answered_then_ends_0(
    remote: Remote, work: Path, signum: signal.Signals
) -> None:
    """SIGTERM killed the server mid-push (SIGINT: exit 130, "run the command again"): no answer, yet
    the task landed, and the agent's retry added it twice. The CLI holds the signal for its push (ADR
    0004); so does the server: the call is answered with its task, then the server ends, exit 0."""
    started, go = hold_pushes(remote)
    wire = Wire(work)
    try:
        wire.call(2, "task_add", description="pushed while stopping")
        until_exists(started)  # its push is under way
        wire.proc.send_signal(signum)
        go.touch()
        is_error, added = document(wire.answer(2))
        assert wire.wait() == 0, wire.stderr
    finally:
        go.touch()
        wire.kill()
    assert not is_error and added["description"] == "pushed while stopping", added
    assert added["transaction"]["pushed"] is True
    assert git(remote.bare, "log", "--format=%B", "main").count(f"Michi-Task: {added['uuid']}") == 1


def test_a_signal_withdraws_the_calls_that_only_wait_and_ends_0(work: Path) -> None:
    """A call waiting for the repo lock, and one queued behind it, are answered `interrupted` while the
    lock is still held (their offers withdrawn: nothing changed), and the server ends, exit 0: it did
    not wait for the lock (or die by the signal, unanswered)."""
    from lockkit import new_lock

    holder = new_lock(work, ttl=300)
    holder.acquire(0)
    wire = Wire(work)
    try:
        wire.call(2, "task_add", progress="p", description="waits", wait=3600)
        wire.until(lambda r: r.get("method") == "notifications/progress")  # it waits for the lock
        wire.call(3, "task_add", description="queued")
        wire.send({"jsonrpc": "2.0", "id": 4, "method": "ping"})
        wire.answer(4)  # the queued call was read
        wire.proc.send_signal(signal.SIGTERM)
        answers = [document(wire.answer(ident)) for ident in (2, 3)]
        assert wire.wait() == 0, wire.stderr
    finally:
        holder.release()
        wire.kill()
    for is_error, doc in answers:
        assert is_error and doc["error"]["code"] == "interrupted", doc
        assert "nothing was changed" in doc["error"]["hint"]
    assert run_michi(work, "--json", "task", "list").json() == []


def test_a_client_that_closes_the_servers_stdout_ends_it_quietly(work: Path) -> None:
    """The client stops reading while a call runs: its change lands, and the server, whose answer cannot
    be written, ends with exit 0 once its input ends (it ended with exit 1, "please report this as a
    bug", an ExceptionGroup of the SDK's transport)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "michi", "--agent", "a1", "-C", str(work), "mcp"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdin is not None and proc.stdout is not None
    add = {"name": "task_add", "arguments": {"description": "answered to nobody"}}
    try:
        proc.stdin.write((json.dumps(HELLO) + "\n").encode())
        proc.stdin.flush()
        assert json.loads(proc.stdout.readline())["id"] == 1
        proc.stdout.close()  # the client is gone
        call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": add}
        _, err = proc.communicate(json.dumps(call).encode() + b"\n", timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err
    assert b"report this as a bug" not in err, err
    listed = run_michi(work, "--json", "task", "list").json()
    assert [t["description"] for t in listed] == ["answered to nobody"]
