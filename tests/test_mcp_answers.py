"""Every request `michi mcp` reads gets exactly one answer, and a call whose change lands is answered
even when the client cancelled it (ADR 0011)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import Remote, git, run_michi
from mcpkit import Wire, document, initialised

pytest.importorskip("mcp")


@pytest.fixture
def work(remote: Remote, cli) -> Path:
    return initialised(remote, cli)


def until_found(folder: Path, pattern: str, count: int = 1, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while len(list(folder.glob(pattern))) < count:
        assert time.monotonic() < deadline, f"no {count} {pattern} in {folder}"
        time.sleep(0.02)


@pytest.mark.parametrize("version", ["2025-03-26", "2025-06-18"])
def test_batches_and_ids_json_rpc_does_not_allow_are_answered(work: Path, version: str) -> None:
    """A JSON-RPC batch (even after negotiating 2025-03-26, whose transport has batches) and a request
    whose id is `true`, `null`, `8.5` or `{}` were answered nothing: the SDK failed the array, and took
    the others for notifications. Each request gets one invalid request error: under its id where it is
    one, else null (JSON-RPC 2.0); a notification in a batch none."""
    hello = {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {
            "protocolVersion": version,
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"},
        },
    }
    cases = [
        ('[{"jsonrpc":"2.0","id":5,"method":"ping"}]', [5]),
        (
            '[{"jsonrpc":"2.0","id":6,"method":"tools/list"},{"jsonrpc":"2.0","method":"notifications/x"},'
            '{"jsonrpc":"2.0","id":"seven","method":"ping"}]',
            [6, "seven"],
        ),
        ("[]", [None]),
        ('{"jsonrpc":"2.0","id":true,"method":"ping"}', [None]),
        ('{"jsonrpc":"2.0","id":null,"method":"ping"}', [None]),
        ('{"jsonrpc":"2.0","id":8.5,"method":"ping"}', [None]),
        ('{"jsonrpc":"2.0","id":{},"method":"ping"}', [None]),
    ]
    wire = Wire(work, hello=hello)
    try:
        for n, (line, ids) in enumerate(cases):
            wire.send(line)
            marker = f"after-{n}"
            wire.send({"jsonrpc": "2.0", "id": marker, "method": "ping"})
            got = []
            while (reply := wire.until(lambda r: "method" not in r, timeout=30))["id"] != marker:
                got.append(reply)
            assert [r["id"] for r in got] == ids, (line, got)
            assert all(r["error"]["code"] == -32600 for r in got), got  # invalid request
        wire.send({"jsonrpc": "2.0", "id": 9, "method": "tools/list"})
        assert wire.answer(9)["result"]["tools"]  # served on
    finally:
        wire.end()
        wire.kill()


def test_a_cancelled_call_the_locks_holder_took_is_answered_with_its_task(remote: Remote, work: Path) -> None:
    """A `task_add` waiting for the lock hands its operation to the CLI command that gets the lock next
    (ADR 0017); the client cancels it while that holder pushes it. It was never answered, yet the task
    landed, and a retry added it twice. The operation can no longer be withdrawn, so the cancellation
    is ignored, as MCP allows for a request that cannot be cancelled: the call is answered with its
    task, and the task lands once."""
    started, go = remote.root / "push-started", remote.root / "push-go"
    hook = remote.bare / "hooks" / "pre-receive"
    hook.write_text(f"#!/bin/sh\ntouch {started}\nwhile [ ! -e {go} ]; do sleep 0.05; done\n")
    hook.chmod(0o755)
    held, release = work.parent / "held", work.parent / "release"
    script = f"touch {held}; while [ ! -e {release} ]; do sleep 0.05; done"
    # A script's lock takes no offers (ADR 0017): the CLI add queued behind it is the one that takes them.
    locker = subprocess.Popen(
        [sys.executable, "-m", "michi", "lock", "run", "--", "sh", "-c", script], cwd=work
    )
    group = work / ".git" / "michi" / "group"
    wire = Wire(work)
    adder = None
    try:
        until_found(held.parent, held.name)
        adder = subprocess.Popen(
            [sys.executable, "-m", "michi", "--json", "task", "add", "by the cli", "--wait", "600"],
            cwd=work,
            stdout=subprocess.PIPE,
        )
        until_found(group, "*.offer")  # the CLI's offer, first in line
        wire.call(2, "task_add", progress="p", description="cancelled but taken", wait=600)
        until_found(group, "*.offer", count=2)
        release.touch()
        until_found(remote.root, started.name)  # the CLI holds the lock and pushes both
        assert list(group.glob("*.taken")), "the server's offer was not taken"
        wire.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 2}})
        wire.send({"jsonrpc": "2.0", "id": 3, "method": "ping"})
        wire.answer(3)  # the cancellation was read
        go.touch()
        is_error, added = document(wire.answer(2))
        out, _ = adder.communicate(timeout=120)
    finally:
        release.touch()
        go.touch()
        wire.end()
        wire.kill()
        locker.wait(timeout=60)
        if adder is not None and adder.poll() is None:
            adder.kill()
    assert adder.returncode == 0 and json.loads(out)["description"] == "by the cli"
    assert not is_error and added["description"] == "cancelled but taken", added
    listed = run_michi(work, "--json", "task", "list", "--fetch").json()
    assert sorted(t["description"] for t in listed) == ["by the cli", "cancelled but taken"]
    assert git(remote.bare, "log", "--format=%B", "main").count(f"Michi-Task: {added['uuid']}") == 1
