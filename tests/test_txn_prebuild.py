"""The operation's commit built before the lock (ADR 0015): used under the lock only when the round
builds on the tip it was built on, never a commitment (nothing is journaled or pushed before the lock),
and every operation still lands exactly once."""

from __future__ import annotations

import json
import re
import signal
import time
from pathlib import Path

import pytest
from conftest import Remote, git, spawn_michi
from test_group_commit import until
from txnkit import drive, michi_commits, start, txn_of

from michi.config import load
from michi.git import repo as git_proc
from michi.repo import find_repo
from michi.unique import uuid4_hex
from michi.workflow import Mutation, TxnRequest, group, txn
from michi.workflow.journal import Entry
from michi.workflow.mutation import allow


def names_on(where: Path, ref: str = "main") -> list[str]:
    out = git(where, "show", f"{ref}:.tasks/log.json", check=False)
    return json.loads(out) if out else []


def assert_exactly_once(bare: Path) -> None:
    """Every operation on one commit of the remote, and on one only (its `Michi-Txn`, its subject)."""
    commits = michi_commits(bare)
    txns = [txn_of(message) for _oid, message in commits]
    assert None not in txns and len(set(txns)) == len(txns)
    subjects = [message.splitlines()[0] for _oid, message in commits]
    assert len(set(subjects)) == len(subjects), subjects


def _witnessed(clone: Path, tmp_path: Path) -> tuple[dict[str, str], Path]:
    log = tmp_path / f"{clone.name}-applied.txt"
    return {"TXNKIT_WITNESS": str(log), "TXNKIT_LOCK": str(clone / ".michi.lock")}, log


def test_a_lone_operation_is_applied_before_the_lock_and_only_pushed_under_it(
    remote: Remote, tmp_path: Path
) -> None:
    one = remote.clone("one")
    env, log = _witnessed(one, tmp_path)
    proc = drive(one, "a", env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert log.read_text().splitlines() == ["a free"]  # applied once, and not under the lock
    assert json.loads(proc.stdout)["result"] == {"name": "a", "count": 1}
    assert names_on(remote.bare) == ["a"]
    assert git(one, "rev-parse", "HEAD") == remote.head()
    assert git(one, "status", "--porcelain") == ""
    assert_exactly_once(remote.bare)


def test_a_commit_built_on_a_stale_tip_is_refused_and_built_again_on_the_fresh_one(
    remote: Remote, tmp_path: Path
) -> None:
    one, two = remote.clone("one"), remote.clone("two")
    assert drive(one, "a").returncode == 0
    assert drive(two, "b").returncode == 0  # one's tracking tip is stale: its first commit is refused
    env, log = _witnessed(one, tmp_path)
    proc = drive(one, "c", env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = json.loads(proc.stdout)
    assert out["attempts"] == 2 and out["result"] == {"name": "c", "count": 3}
    assert log.read_text().splitlines() == ["c free", "c free"]  # each round's commit built unlocked
    assert names_on(remote.bare) == ["a", "b", "c"]
    assert names_on(one, "HEAD") == ["a", "b", "c"]
    assert_exactly_once(remote.bare)


def test_a_refusal_seen_before_the_lock_is_decided_again_under_it(remote: Remote, tmp_path: Path) -> None:
    one, two = remote.clone("one"), remote.clone("two")
    assert drive(one, "x").returncode == 0
    assert drive(two, "y").returncode == 0
    env, log = _witnessed(one, tmp_path)
    # one refused lately: it fetches before the lock, and its prebuilt commit lands as built
    assert drive(one, "z", env=env).returncode == 0
    assert drive(two, "w").returncode == 0
    proc = drive(one, "w", "--refuse", env=env)  # the prebuild on the fetched tip sees `w`: only a guess
    assert proc.returncode == 4, proc.stdout + proc.stderr
    assert json.loads(proc.stdout)["error"]["code"] == "conflict"
    assert log.read_text().splitlines()[-1] == "w locked"  # the refusal itself was decided under the lock
    assert names_on(remote.bare) == ["x", "y", "z", "w"]
    assert not (one / ".git/michi/journal.json").exists()


def test_killed_after_building_before_the_lock_nothing_landed(remote: Remote) -> None:
    one = remote.clone("one")
    assert drive(one, "a").returncode == 0
    before = remote.head()
    killed = drive(one, "b", env={"MICHI_FAULT": "prebuilt"})
    assert killed.returncode == -signal.SIGKILL, killed.stdout + killed.stderr
    assert remote.head() == before  # nothing pushed
    assert not (one / ".git/michi/journal.json").exists()  # nor journaled: nothing to recover
    assert not (one / ".michi.lock").exists()  # the lock was never taken
    again = json.loads(drive(one, "b").stdout)
    assert again["pushed"] and again["recovered"] == 0
    assert names_on(remote.bare) == ["a", "b"]
    assert_exactly_once(remote.bare)


def test_a_commit_built_before_a_long_lock_wait_reads_the_clock_again_under_the_lock(
    remote: Remote, tmp_path: Path
) -> None:
    one = remote.clone("one")
    go = tmp_path / "go"
    holder = spawn_michi(one, "lock", "run", "--", "sh", "-c", f"until [ -e {go} ]; do sleep 0.01; done")
    until(lambda: (one / ".michi.lock").exists(), holder)
    env, log = _witnessed(one, tmp_path)
    waiter = start(one, "a", env={**env, "TXNKIT_STAMP": "1", "MICHI_LOCK_WAIT": "60"})
    until(lambda: log.exists() and log.read_text() != "", holder, waiter)  # built before the lock
    # A script holds the clone's lock for seconds (tests, a build): the clock is what passes here.
    time.sleep(txn._PREBUILT_FOR + 0.5)
    released = time.time()
    go.touch()
    assert holder.wait(timeout=120) == 0
    out, err = waiter.communicate(timeout=120)
    assert waiter.returncode == 0, out + err
    (_oid, message), *_ = michi_commits(remote.bare)
    found = re.search(r"^Txnkit-Now: (\S+)$", message, re.MULTILINE)
    assert found is not None, message
    # The operation happens when it takes the lock, not when its command started waiting for it: a claim
    # taken with `--ttl 10` after a 30 s wait would land expired, and another agent claim it at once.
    assert float(found.group(1)) >= released
    assert names_on(remote.bare) == ["a"]
    assert_exactly_once(remote.bare)


def test_operations_taken_from_waiters_go_on_top_of_the_prebuilt_commit(
    remote: Remote, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    one = remote.clone("one")
    env, log = _witnessed(one, tmp_path)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    allow("txnkit:append")  # the offer names it
    paths = find_repo(one)
    req = TxnRequest(repo=paths, config=load(paths.config_file), command="append b", agent="driver")
    holder = txn.Transaction(req)
    # A waiter of this clone (this very process: alive) has handed over its operation (ADR 0017).
    target = group.target_of(holder.target.remote, holder.target.branch, str(paths.git_dir), holder.identity)
    waiting = Entry(uuid4_hex(), Mutation("txnkit:append", {"name": "c"}), "append c", "driver")
    offer = group.Offer(paths.state_dir, waiting, target)
    offer.post()
    try:
        outcome = holder.run([Mutation("txnkit:append", {"name": "b"})])
    finally:
        git_proc.forget()
    # b applied once, before the lock: its prebuilt commit was used, and c was applied on top of it
    assert log.read_text().splitlines() == ["b free", "c locked"]
    assert outcome.pushed and outcome.result == {"name": "b", "count": 1}
    assert names_on(remote.bare) == ["b", "c"]
    (c_oid, c_message), (b_oid, _b_message) = michi_commits(remote.bare)
    assert txn_of(c_message) == waiting.txn and git(remote.bare, "rev-parse", f"{c_oid}^") == b_oid
    assert outcome.commit == c_oid
    assert offer.answered()
    answer = offer.outcome()
    assert answer.pushed and answer.commit == c_oid and answer.result == {"name": "c", "count": 2}
    offer.close()
    assert not (one / ".git/michi/journal.json").exists()
    assert git(one, "rev-parse", "HEAD") == remote.head() and git(one, "status", "--porcelain") == ""
    assert_exactly_once(remote.bare)
