"""A round built on the remote tip fetched without the lock (ADR 0004): the checkout it moves afterwards
takes the other clones' changes along with its own, and nothing of the user's is touched."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from conftest import Remote, git, run_michi

from michi.git import checkout, prepared
from michi.lock import RepoLock
from michi.workflow import txn
from michi.workflow.journal import Entry, Journal


def _add(clone: Path, what: str) -> dict[str, object]:
    out = run_michi(clone, "--json", "task", "add", what)
    assert out.exit_code == 0, out.stdout + out.stderr
    return out.json()


def test_the_checkout_moves_by_what_the_fetch_between_rounds_brought(remote: Remote) -> None:
    one = remote.clone("one")
    assert run_michi(one, "init").exit_code == 0
    two = remote.clone("two")
    _add(one, "first")
    (one / "notes.txt").write_text("staged\n")
    git(one, "add", "notes.txt")
    (one / "README.md").write_text("unstaged\n")
    theirs = [_add(two, f"theirs {n}") for n in range(2)]  # one's last-known tip is stale now
    mine = _add(one, "mine")  # refused once, then built on the tip fetched between the rounds
    ours = _add(one, "ours")  # a refused push lately: fetched before the lock
    for task in [*theirs, mine, ours]:
        assert run_michi(one, "--json", "task", "show", str(task["id"])).exit_code == 0
    assert git(one, "rev-parse", "HEAD") == remote.head()
    # index and work tree are HEAD's, but for the user's own two changes, which are as they were
    assert git(one, "diff", "--name-only") == "README.md"
    assert git(one, "diff", "--cached", "--name-only") == "notes.txt"
    assert (one / "README.md").read_text() == "unstaged\n"
    listed = git(one, "ls-files", "--", ".tasks").splitlines()
    assert listed == git(one, "ls-tree", "-r", "--name-only", "HEAD", "--", ".tasks").splitlines()
    assert all((one / path).is_file() for path in listed)
    assert git(one, "diff", "--stat", "HEAD", "--", ".tasks") == ""


def test_a_round_whose_push_was_refused_starts_no_move_beside_it(
    cli, remote: Remote, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Beside the push, the checkout move's restore and update-ref are started for a push that lands. A
    push already refused by then (another clone landed first) starts none of them: its round fetches at
    once. The operation lands in the next round, once, and the checkout follows."""
    one = remote.clone("one")
    assert run_michi(one, "init").exit_code == 0
    two = remote.clone("two")
    _add(one, "first")  # one's checkout and its last-known tip are the remote's
    theirs: list[dict[str, object]] = []

    def naming(journal: Journal, entries: list[Entry], lock: RepoLock, pid: int) -> None:
        if not theirs:  # the first round's push is about to start: another clone lands first
            theirs.append(_add(two, "theirs"))
        real_naming(journal, entries, lock, pid)

    statuses: list[int | None] = []

    def beside(self: txn.Transaction, *args: Any) -> None:
        pid, status = args[-2:]
        os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)  # the push has ended (not reaped: still ours)
        statuses.append(status())
        real_beside(self, *args)

    started: list[str] = []  # what the move started ahead, by kind

    def prepare(repo: object, key: tuple[str, ...], *args: Any, **kw: Any) -> None:
        started.append(key[0])
        real_prepare(repo, key, *args, **kw)

    checks: list[str] = []  # the move's first check: its index read, or git's two processes

    def made(cls: type, *args: Any) -> Any:
        checks.append("read")
        return real_made(*args)

    def ahead(self: Any, *args: Any) -> None:
        checks.append("git")
        real_ahead(self, *args)

    real_naming, real_beside = txn.Transaction._naming, txn.Transaction._beside
    real_prepare, real_made, real_ahead = prepared.prepare, checkout._Read.made, checkout._Ahead.__init__
    monkeypatch.setattr(checkout._Read, "made", classmethod(made))
    monkeypatch.setattr(checkout._Ahead, "__init__", ahead)
    monkeypatch.setattr(txn.Transaction, "_naming", staticmethod(naming))
    monkeypatch.setattr(txn.Transaction, "_beside", beside)
    monkeypatch.setattr(prepared, "prepare", prepare)
    mine = cli(one, "--json", "task", "add", "mine")
    assert mine.exit_code == 0, mine.stdout + mine.stderr
    assert statuses[0] not in (None, 0) and statuses[-1] == 0 and len(statuses) == 2
    assert len(started) == 2 and "update-ref" in started  # restore and update-ref, for the landing round
    assert len(checks) == 1  # and its first check: the refused round started none
    assert git(one, "rev-parse", "HEAD") == remote.head()
    assert git(one, "status", "--porcelain") == ""
    for task in (*theirs, mine.json()):
        assert run_michi(one, "--json", "task", "show", str(task["id"])).exit_code == 0
