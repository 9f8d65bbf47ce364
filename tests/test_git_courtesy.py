"""Git processes started while michi waits for its turn yield the CPU (ADR 0015): real git, real `nice`."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import Remote

from michi import git
from michi.config import load
from michi.git import courtesy
from michi.git import repo as git_proc
from michi.repo import find_repo
from michi.workflow import TxnRequest
from michi.workflow.txn import Transaction

pytestmark = pytest.mark.skipif(shutil.which("nice") is None, reason="no `nice` on PATH")


def _niceness(repo: Path) -> int:
    """The niceness a git process michi starts runs at (a shell alias that prints its own)."""
    status, out, err = git.open_repo(repo).execute(["-c", "alias.niceness=!nice", "niceness"])
    assert status == 0, err
    return int(out)


def test_git_started_while_yielding_runs_at_a_lower_priority(repo: Path) -> None:
    plain = _niceness(repo)
    with git.yielding():
        lowered = _niceness(repo)
    assert lowered == min(19, plain + courtesy.NICENESS)
    assert _niceness(repo) == plain  # only inside it


def test_yielding_can_be_switched_off_for_one_step(repo: Path) -> None:
    plain = _niceness(repo)
    with git.yielding(), git.yielding(False):  # a turn's holder: the other clones wait for it
        assert _niceness(repo) == plain


@pytest.fixture(autouse=True)
def _one_repo_per_test() -> Iterator[None]:
    yield
    git_proc.forget()  # its `cat-file`: the next test starts from a fresh `Repo`, as a command does


def _remote_side_niceness(clone: Path, log: Path) -> None:
    """Each upload-pack the clone starts at its remote (a fetch, a look at the turn) writes its niceness
    to `log`: at a local remote it is the clone's git process's child, and inherits it."""
    wrapper = log.with_suffix(".sh")
    wrapper.write_text(f'#!/bin/sh\nnice >> "{log}"\nexec git upload-pack "$@"\n')
    wrapper.chmod(0o755)
    subprocess.run(["git", "config", "remote.origin.uploadpack", str(wrapper)], cwd=clone, check=True)


def test_the_clone_holding_the_turn_waits_and_fetches_at_normal_priority(
    remote: Remote, tmp_path: Path
) -> None:
    one = remote.clone("one")
    log = tmp_path / "niceness.txt"
    _remote_side_niceness(one, log)
    paths = find_repo(one)
    txn = Transaction(TxnRequest(repo=paths, config=load(paths.config_file), command="test", agent="t"))
    txn.refusals = txn.req.config.push_retries  # a clone refused that often takes its turn (ADR 0004)
    txn._turn().wait(want=True)
    assert txn.turn is not None and txn.turn.mine is not None
    plain = os.nice(0)
    log.unlink(missing_ok=True)
    # Refused once more while holding its turn: every other contended clone waits for this one now.
    txn._next_round()
    seen = log.read_text().split()
    assert len(seen) == 2, seen  # one look at the turn, one fetch
    assert set(seen) == {str(plain)}


def test_a_clone_without_the_turn_waits_and_fetches_yielding(remote: Remote, tmp_path: Path) -> None:
    one = remote.clone("one")
    log = tmp_path / "niceness.txt"
    _remote_side_niceness(one, log)
    paths = find_repo(one)
    txn = Transaction(TxnRequest(repo=paths, config=load(paths.config_file), command="test", agent="t"))
    plain = os.nice(0)
    txn._next_round()  # refused once: a back-off, a look at the turn (nobody's), a fetch
    seen = log.read_text().split()
    assert len(seen) == 2, seen
    assert set(seen) == {str(min(19, plain + courtesy.NICENESS))}
