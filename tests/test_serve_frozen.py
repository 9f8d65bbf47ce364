"""A server that does not take a command (ADR 0016): stopped (SIGSTOP of its process group, a debugger, a
suspended job) or stuck. The caller waits CLAIM_WITHIN at most, takes the command back and runs it itself;
a stop signal before a worker claimed it takes it back too. A worker runs only a command it claimed, so
the server, once it wakes, runs nothing a second time; a command a worker claimed is its, however late."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from michi.serve.client import CLAIM_WITHIN, PID_WITHIN
from tests.conftest import CliResult, run_michi, spawn_michi
from tests.lockkit import await_exit, new_lock, wait_until
from tests.servekit import here, running_server

NOTE = "did not take the command"


_here = here


def _served(repo: Path, *args: str) -> CliResult:
    return run_michi(repo, *args, env={"MICHI_DEBUG": "1"}, timeout=CLAIM_WITHIN + 30)


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict]:
    yield from running_server(monkeypatch)


@pytest.fixture
def tracker(repo: Path) -> Path:
    assert _here(repo, "init").exit_code == 0
    return repo


Spawn = Callable[..., subprocess.Popen[str]]


@pytest.fixture
def spawn(tracker: Path) -> Iterator[Spawn]:
    """`spawn_michi` in the tracker; a caller a failed test left running is killed at its end."""
    started: list[subprocess.Popen[str]] = []

    def start(*args: str, **env: str) -> subprocess.Popen[str]:
        started.append(spawn_michi(tracker, *args, env=env))
        return started[-1]

    yield start
    for client in started:
        if client.poll() is None:
            client.kill()
            client.communicate()


def _described(server: dict) -> dict:
    """The server's own description (`michi server status` reads it), read directly: no process to start.
    None left (the server ended): no workers."""
    for name in os.listdir(server["folder"]):
        if name.startswith("s-") and name.endswith(".json"):
            return json.loads((Path(server["folder"]) / name).read_text())
    return {"workers": []}


def _stopped(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] == "T"
    except FileNotFoundError:  # ended
        return False


def _stopped_worker(server: dict) -> int:
    """The worker that took the client's request and stopped itself at its fault point."""
    found: list[int] = []

    def stopped() -> bool:
        found[:] = [w["pid"] for w in _described(server)["workers"] if _stopped(w["pid"])]
        return bool(found)

    wait_until(stopped, what="a worker stopped at its fault point")
    return found[0]


def _catches(pid: int, signum: int) -> bool:
    """Whether `pid` has a handler for `signum` (its client installs them to pass signals on)."""
    with open(f"/proc/{pid}/status") as status:
        caught = next(line for line in status if line.startswith("SigCgt:"))
    return bool(int(caught.split()[1], 16) >> (signum - 1) & 1)


def _descriptions(repo: Path) -> list[str]:
    listed = _here(repo, "--json", "task", "list", "--state", "any")
    assert listed.exit_code == 0, listed.stderr
    return sorted(task["description"] for task in listed.json())


def _all_ended(server: dict, repo: Path) -> None:
    """The server, continued, takes what waited in its queue; a command served now is queued after it,
    and once no worker runs, every request before it had its worker."""
    after = _served(repo, "--json", "task", "add", "after")
    assert after.exit_code == 0, after.stderr
    assert "served by the michi server" in after.stderr
    wait_until(lambda: not _described(server)["workers"], what="every worker to end")


def test_a_stopped_server_never_holds_a_command(server: dict, tracker: Path) -> None:
    """The whole process group stopped: the caller runs the command itself within the bound, once; the
    server, continued, runs nothing of it."""
    os.killpg(server["pid"], signal.SIGSTOP)
    try:
        began = time.monotonic()
        added = _served(tracker, "--json", "task", "add", "frozen")
        took = time.monotonic() - began
    finally:
        os.killpg(server["pid"], signal.SIGCONT)
    assert added.exit_code == 0, added.stderr
    assert added.json()["description"] == "frozen"
    assert NOTE in added.stderr and "served by" not in added.stderr
    assert CLAIM_WITHIN <= took < CLAIM_WITHIN + 20
    _all_ended(server, tracker)
    assert _descriptions(tracker) == ["after", "frozen"]


def test_a_worker_stopped_before_its_claim_runs_nothing(server: dict, tracker: Path, spawn: Spawn) -> None:
    """A worker that took the request but stopped before it claimed the command, continued while its
    caller (which took the command back) still runs it: it finds the command taken and runs nothing."""
    lock = new_lock(tracker)
    lock.acquire(timeout=5)
    try:
        client = spawn(
            *("--json", "task", "add", "once", "--wait", "60"),
            MICHI_DEBUG="1",
            MICHI_FAULT="claiming:SIGSTOP",
        )
        worker = _stopped_worker(server)
        queue = tracker / ".git" / "michi" / "lock-queue"
        wait_until(
            lambda: queue.is_dir() and any(queue.iterdir()),
            timeout=CLAIM_WITHIN + 30,
            what="the caller waiting for the lock, running the command itself",
        )
        os.kill(worker, signal.SIGCONT)
        await_exit(worker)
    finally:
        lock.release()
    out, err = client.communicate(timeout=60)
    assert client.returncode == 0, err
    assert NOTE in err and "served by" not in err
    assert json.loads(out)["description"] == "once"
    assert _descriptions(tracker) == ["once"]


def test_a_claimed_command_is_the_workers_however_late(server: dict, tracker: Path, spawn: Spawn) -> None:
    """A worker that claimed the command and stopped before it said so: past the bound the caller cannot
    take it back, so it waits; continued, the worker runs it, once."""
    client = spawn("--json", "task", "add", "late", MICHI_DEBUG="1", MICHI_FAULT="claimed:SIGSTOP")
    worker = _stopped_worker(server)
    with pytest.raises(subprocess.TimeoutExpired):
        client.wait(timeout=CLAIM_WITHIN + 2)  # past the bound: still waiting for its worker
    os.kill(worker, signal.SIGCONT)
    out, err = client.communicate(timeout=60)
    assert client.returncode == 0, err
    assert "served by" in err and NOTE not in err
    assert json.loads(out)["description"] == "late"
    assert _descriptions(tracker) == ["late"]


@pytest.mark.parametrize("sent", ["SIGINT", "SIGTERM", "SIGHUP"])
def test_a_stop_before_the_claim_takes_the_command_back(
    server: dict, tracker: Path, spawn: Spawn, sent: str
) -> None:
    """Ctrl-C, SIGTERM or SIGHUP while a worker has not claimed the command: the caller ends as michi
    stopped before its command began (130: `interrupted`, or `terminated` for the other two), and the
    worker, continued, runs nothing."""
    sig = getattr(signal, sent)
    client = spawn("--json", "task", "add", "never", MICHI_FAULT="claiming:SIGSTOP")
    worker = _stopped_worker(server)
    client.send_signal(sig)
    out, err = client.communicate(timeout=CLAIM_WITHIN + 30)
    assert NOTE not in err
    assert client.returncode == 130, err
    assert json.loads(out)["error"]["code"] == ("interrupted" if sig == signal.SIGINT else "terminated")
    os.kill(worker, signal.SIGCONT)
    await_exit(worker)
    assert _descriptions(tracker) == []


def test_a_stop_while_the_server_is_stopped_ends_the_caller(
    server: dict, tracker: Path, spawn: Spawn
) -> None:
    """A stop signal while the server is stopped: its process group stopped, the caller sent SIGTERM once
    it passes signals on. It ends at once (130, `terminated`), and the server, continued, runs nothing."""
    os.killpg(server["pid"], signal.SIGSTOP)
    try:
        client = spawn("--json", "task", "add", "never")
        wait_until(lambda: _catches(client.pid, signal.SIGTERM), what="the caller's handlers")
        client.send_signal(signal.SIGTERM)
        out, _ = client.communicate(timeout=CLAIM_WITHIN - 1)  # at once, well within the bound
        assert client.returncode == 130
        assert json.loads(out)["error"]["code"] == "terminated"
    finally:
        os.killpg(server["pid"], signal.SIGCONT)
    _all_ended(server, tracker)
    assert _descriptions(tracker) == ["after"]


def _children(pid: int) -> dict[int, str]:
    """The children of `pid` and their states (`Z`: dead, not yet reaped)."""
    found: dict[int, str] = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat") as stat:
                    fields = stat.read().rsplit(")", 1)[1].split()
            except (FileNotFoundError, ProcessLookupError):
                continue
            if int(fields[1]) == pid:
                found[int(name)] = fields[0]
    return found


@pytest.mark.parametrize("fault", ["claimed", "locked"])
def test_workers_killed_while_the_server_is_stopped_each_report_their_end(
    server: dict, tracker: Path, spawn: Spawn, fault: str
) -> None:
    """The server alone stopped, its two spares take two callers and are killed (SIGKILL) before it read
    either hand-over: just after the claim (before the PID: each caller runs the command itself) or in
    the command (each caller dies of SIGKILL, as its worker did). Continued, the server learns of both
    workers before it reports their ends: neither caller waits for ever, none is left running."""
    os.kill(server["pid"], signal.SIGSTOP)
    try:
        clients = [spawn("--json", "task", "add", name, MICHI_FAULT=fault) for name in ("one", "two")]
        wait_until(
            lambda: list(_children(server["pid"]).values()).count("Z") == 2,
            timeout=CLAIM_WITHIN + 30,
            what="both workers killed",
        )
    finally:
        os.kill(server["pid"], signal.SIGCONT)
    for client in clients:
        out, err = client.communicate(timeout=30)
        if fault == "claimed":
            assert client.returncode == 0, err
            assert NOTE not in err and json.loads(out)["description"] in ("one", "two")
        else:
            assert client.returncode == -signal.SIGKILL, err
    wait_until(lambda: not _described(server)["workers"], what="no worker left running")
    if fault == "claimed":
        assert _descriptions(tracker) == ["one", "two"]


@pytest.mark.parametrize("sent", ["SIGINT", "SIGTERM"])
def test_a_stop_after_the_claim_before_the_pid_ends_the_caller(
    server: dict, tracker: Path, spawn: Spawn, sent: str
) -> None:
    """A worker that claimed the command and stopped before it said its PID: a stop signal to the caller
    ends it (130: `interrupted` or `terminated`) once the PID did not come within PID_WITHIN; the worker,
    continued, finds its caller gone and runs nothing."""
    sig = getattr(signal, sent)
    client = spawn("--json", "task", "add", "never", MICHI_FAULT="claimed:SIGSTOP")
    worker = _stopped_worker(server)
    client.send_signal(sig)
    try:
        client.wait(timeout=CLAIM_WITHIN + PID_WITHIN + 10)  # (its pipes: the stopped worker has them too)
    finally:
        os.kill(worker, signal.SIGCONT)
    out, err = client.communicate(timeout=30)
    assert client.returncode == 130, err
    assert json.loads(out)["error"]["code"] == ("interrupted" if sig == signal.SIGINT else "terminated")
    await_exit(worker)
    assert _descriptions(tracker) == []
