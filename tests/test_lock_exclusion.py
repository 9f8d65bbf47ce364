"""Mutual exclusion and takeover with real processes and real SIGKILLs (ADR 0003)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from lockkit import CTX, dead_pid, exclusion_worker, race_worker, write_record

from michi.lock import events

pytestmark = pytest.mark.slow


def _run_workers(repo: Path, rounds: int, kill_at: dict[int, int]) -> tuple[int, list[str]]:
    marker = repo.parent / "occupied"
    pipes, procs = [], []
    for i in range(8):
        recv, send = CTX.Pipe(duplex=False)
        proc = CTX.Process(target=exclusion_worker, args=(repo, marker, rounds, kill_at.get(i), send))
        proc.start()
        pipes.append(recv)
        procs.append(proc)
    overlaps, outcomes = 0, []
    for recv, proc in zip(pipes, procs, strict=True):
        assert recv.poll(90), "a worker never finished: a waiter starved or the lock deadlocked"
        outcome, seen = recv.recv()
        overlaps += seen
        outcomes.append(outcome)
        proc.join(30)
    return overlaps, outcomes


def test_eight_processes_never_overlap(local_repo: Path) -> None:
    overlaps, outcomes = _run_workers(local_repo, 300, {})
    assert overlaps == 0
    assert outcomes == ["done"] * 8
    assert not (local_repo / ".michi.lock").exists()
    stats = events.summarize(events.read(local_repo / ".git" / "michi"))
    assert stats["acquisitions"] == 8 * 300
    assert stats["takeovers"] == 0


def test_sigkilled_holders_never_cause_overlap(local_repo: Path) -> None:
    kill_at = {0: 40, 3: 90, 6: 10}  # about a third of the holders die holding the lock
    overlaps, outcomes = _run_workers(local_repo, 150, kill_at)
    assert overlaps == 0
    assert outcomes.count("killed") == 3
    assert outcomes.count("done") == 5  # every surviving waiter got the lock all 150 times
    stats = events.summarize(events.read(local_repo / ".git" / "michi"))
    assert stats["takeovers"] == 3
    assert set(stats["takeover_reasons"]) == {"dead"}


@pytest.mark.parametrize("round_", range(3))
def test_takeover_race_has_exactly_one_winner(local_repo: Path, round_: int) -> None:
    write_record(local_repo, pid=dead_pid())
    go, done = CTX.Event(), CTX.Event()
    pipes, procs = [], []
    for _ in range(12):
        recv, send = CTX.Pipe(duplex=False)
        proc = CTX.Process(target=race_worker, args=(local_repo, go, done, send))
        proc.start()
        pipes.append(recv)
        procs.append(proc)
    go.set()  # all at once on the same stale lock
    won = []
    for recv in pipes:
        assert recv.poll(30)
        won.append(recv.recv())
    done.set()
    for proc in procs:
        proc.join(30)
    assert won.count(True) == 1
    lines = [json.loads(x) for x in (local_repo / ".git/michi/lock-events.jsonl").read_text().splitlines()]
    assert [e["takeover"] for e in lines if e["kind"] == "hold"] == ["dead"]
