"""Group commit (ADR 0017) against real git and real processes: waiters of one clone hand their operation
to the lock's holder, which lands them all in one push; each waiter answers with its own outcome, and
every operation lands exactly once whoever is killed when."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import Remote, git, run_michi, spawn_michi
from txnkit import DRIVER, assert_exactly_once, gated_hook, michi_commits, start, txn_of


def until(done: Callable[[], bool], *procs: subprocess.Popen[str]) -> None:
    """Wait for `done`, failing at once if one of `procs` ended first (or after a minute)."""
    deadline = time.monotonic() + 60
    while not done():
        ended = [p for p in procs if p.poll() is not None]
        assert not ended, ended[0].communicate()
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def count(folder: Path, suffix: str) -> int:
    return len([n for n in os.listdir(folder) if n.endswith(suffix)]) if folder.is_dir() else 0


def offers(repo: Path) -> int:
    return count(repo / ".git/michi/group", ".offer")


def queued(repo: Path) -> int:
    return count(repo / ".git/michi/lock-queue", ".ticket")


def once(bare: Path) -> None:
    """No `Michi-Txn` on two commits, none without one (the driver's shared log is not a task file)."""
    txns = [txn_of(m) for _oid, m in michi_commits(bare)]
    assert None not in txns and len(set(txns)) == len(txns), txns


def names_on(where: Path, ref: str = "main") -> list[str]:
    out = git(where, "show", f"{ref}:.tasks/log.json", check=False)
    return json.loads(out) if out else []


def pushes(signals: Path) -> int:
    return count(signals, "") and len([n for n in os.listdir(signals) if n.startswith("reached.")])


def finish(proc: subprocess.Popen[str]) -> tuple[int, Any]:
    out, err = proc.communicate(timeout=120)
    assert out, err
    return proc.returncode, json.loads(out)


def queue_behind_holder(
    repo: Path,
    signals: Path,
    names: list[str],
    envs: dict[str, dict[str, str]] | None = None,
    push: int = 1,
) -> tuple[subprocess.Popen[str], list[subprocess.Popen[str]]]:
    """A holder adding `a` whose push (number `push`) waits at the remote, then one waiter per name,
    queued in order (`!name`: refuse when the name is there already; `?name`: write outside michi's
    files, which the engine refuses)."""
    holder = start(repo, "a")
    until(lambda: (signals / f"reached.{push}").exists(), holder)
    waiters: list[subprocess.Popen[str]] = []
    for n, name in enumerate(names, 1):
        flags = {"!": ["--refuse"], "?": ["--stray"]}.get(name[0], [])
        waiters.append(start(repo, name.lstrip("!?"), *flags, env=(envs or {}).get(name)))
        until(lambda n=n: offers(repo) == n and queued(repo) == n, holder, *waiters)
    return holder, waiters


@pytest.fixture
def gated(remote: Remote, repo: Path) -> Path:
    signals = remote.root / "signals"
    gated_hook(remote.bare, signals)
    return signals


def test_waiters_land_in_one_push_with_their_own_answers(remote: Remote, repo: Path, gated: Path) -> None:
    holder, waiters = queue_behind_holder(repo, gated, ["b", "c", "d", "e"])
    (gated / "open").touch()
    assert finish(holder)[0] == 0
    for proc, name in zip(waiters, "bcde", strict=True):
        code, out = finish(proc)
        assert code == 0, out
        assert out["result"]["name"] == name and out["pushed"]
    assert pushes(gated) == 2  # the holder's own, then b's with c, d and e
    assert sorted(names_on(remote.bare)) == ["a", "b", "c", "d", "e"]
    once(remote.bare)
    assert git(repo, "rev-parse", "main") == remote.head()
    assert offers(repo) == 0 and count(repo / ".git/michi/group", "") == 0
    assert not (repo / ".git/michi/journal.json").exists()


def test_opting_out_keeps_one_push_each(remote: Remote, repo: Path, gated: Path) -> None:
    off = {"MICHI_GROUP_COMMIT": "false"}
    holder = start(repo, "a")
    until(lambda: (gated / "reached.1").exists(), holder)
    waiters = [start(repo, name, env=off) for name in "bc"]
    until(lambda: queued(repo) == 2, holder, *waiters)
    (gated / "open").touch()
    assert [finish(p)[0] for p in [holder, *waiters]] == [0, 0, 0]
    assert pushes(gated) == 3 and offers(repo) == 0
    once(remote.bare)


def test_a_refusal_goes_back_to_its_waiter_only(remote: Remote, repo: Path, gated: Path) -> None:
    (gated / "gate.1").touch()
    assert names_on(remote.bare) == [] and start(repo, "x").wait() == 0
    # the first waiter, whose own operation refuses, holds the batch
    holder, waiters = queue_behind_holder(repo, gated, ["!x", "b", "!a", "c", "?s"], push=2)
    (gated / "open").touch()
    assert finish(holder)[0] == 0
    results = [finish(p) for p in waiters]
    assert [code for code, _out in results] == [4, 0, 4, 0, 1]
    assert "not a file of michi's" in results[4][1]["error"]["message"]
    assert results[0][1]["error"]["code"] == "conflict"
    assert "x is already there" in results[0][1]["error"]["message"]
    assert "a is already there" in results[2][1]["error"]["message"]
    assert [out["result"]["name"] for _c, out in results[1::2]] == ["b", "c"]
    assert sorted(names_on(remote.bare)) == ["a", "b", "c", "x"]
    once(remote.bare)


@pytest.mark.parametrize("phase", ["locked", "committed", "pushed"])
def test_sigkill_of_the_batch_holder_lands_every_operation_once(
    remote: Remote, repo: Path, gated: Path, phase: str
) -> None:
    holder, waiters = queue_behind_holder(repo, gated, ["b", "c", "d"], {"b": {"MICHI_FAULT": phase}})
    (gated / "open").touch()
    assert finish(holder)[0] == 0
    killed, *rest = waiters
    assert killed.wait(timeout=120) == -signal.SIGKILL
    for proc, name in zip(rest, "cd", strict=True):
        code, out = finish(proc)
        assert code == 0, out
        assert out["result"]["name"] == name
    assert start(repo, "e").wait(timeout=120) == 0  # finishes whatever the killed holder left
    assert sorted(names_on(remote.bare)) == ["a", "b", "c", "d", "e"]
    once(remote.bare)
    assert not (repo / ".git/michi/journal.json").exists()


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGINT])
def test_a_waiter_killed_or_interrupted_after_its_operation_was_taken(
    remote: Remote, repo: Path, gated: Path, sig: signal.Signals
) -> None:
    holder, (batch, victim) = queue_behind_holder(repo, gated, ["b", "c"])
    (gated / "gate.1").touch()
    until(lambda: (gated / "reached.2").exists(), batch)  # b's push, carrying c, waits at the remote
    assert offers(repo) == 0  # taken
    victim.send_signal(sig)
    if sig == signal.SIGKILL:
        victim.wait()
    (gated / "open").touch()
    assert finish(holder)[0] == 0 and finish(batch)[0] == 0
    if sig == signal.SIGINT:  # held until it answered: c lands, and it says so (it said "do not repeat")
        code, out = finish(victim)
        assert code == 0 and out["result"]["name"] == "c" and out["pushed"], out
    assert start(repo, "d").wait(timeout=120) == 0
    assert names_on(remote.bare) == ["a", "b", "c", "d"]
    assert count(repo / ".git/michi/group", "") == 0  # the dead waiter's claim and answer, swept by d
    once(remote.bare)


def test_a_taken_waiter_outwaits_its_deadline_an_untaken_one_gives_up(
    remote: Remote, repo: Path, gated: Path
) -> None:
    short = {"MICHI_LOCK_WAIT": "1"}
    holder, (batch, taken) = queue_behind_holder(repo, gated, ["b", "c"], {"c": short})
    (gated / "gate.1").touch()
    until(lambda: (gated / "reached.2").exists(), batch)
    late = start(repo, "z", env={"MICHI_LOCK_WAIT": "0.5"})
    assert late.wait(timeout=120) == 75  # never taken: it gives up and withdraws its offer
    time.sleep(1.2)  # c's deadline passes while its operation waits at the remote in b's push
    (gated / "open").touch()
    assert finish(holder)[0] == 0 and finish(batch)[0] == 0
    code, out = finish(taken)
    assert code == 0 and out["result"]["name"] == "c"
    assert names_on(remote.bare) == ["a", "b", "c"] and offers(repo) == 0
    once(remote.bare)


def _cli_batch(
    remote: Remote, repo: Path, waiting: list[list[str]]
) -> tuple[subprocess.Popen[str], list[subprocess.Popen[str]]]:
    """A `task add first` held at the remote's gate, and `michi --json ARGS` for each of `waiting` queued
    behind it, each one's offer posted before the next starts."""
    signals = remote.root / "signals"
    gated_hook(remote.bare, signals)
    first = spawn_michi(repo, "--json", "task", "add", "first")
    until(lambda: (signals / "reached.1").exists(), first)
    procs: list[subprocess.Popen[str]] = []
    for n, args in enumerate(waiting):
        procs.append(spawn_michi(repo, "--json", *args))
        until(lambda n=n: offers(repo) == n + 1, first, *procs)
    return first, procs


def test_concurrent_task_adds_each_get_their_own_task(remote: Remote, repo: Path) -> None:
    assert run_michi(repo, "init").exit_code == 0
    signals = remote.root / "signals"
    first, adds = _cli_batch(remote, repo, [["task", "add", f"waiter {n}"] for n in range(5)])
    (signals / "open").touch()
    outs = [finish(p) for p in [first, *adds]]
    assert [code for code, _o in outs] == [0] * 6
    assert [o["description"] for _c, o in outs] == ["first"] + [f"waiter {n}" for n in range(5)]
    assert sorted(int(o["id"]) for _c, o in outs) == [1, 2, 3, 4, 5, 6]
    assert all(o["transaction"]["pushed"] for _c, o in outs)
    assert pushes(signals) == 2
    listed = run_michi(repo, "--json", "task", "list").json()
    assert sorted(t["description"] for t in listed) == sorted(o["description"] for _c, o in outs)
    assert_exactly_once(remote.bare)


@pytest.mark.slow
def test_waves_of_adds_with_random_kills_land_each_at_most_once(remote: Remote, repo: Path) -> None:
    """Waves of concurrent adds in one clone, some SIGKILLed at a fault point (as batch holders or alone)
    or while they wait: an add that answered lands exactly once with the id it answered, a killed one
    at most once, and no transaction is on two commits. The seed (`MICHI_STRESS_SEED`) fixes the choices,
    not the timing."""
    seed = int(os.environ.get("MICHI_STRESS_SEED") or random.randrange(1 << 30))
    print(f"MICHI_STRESS_SEED={seed}")
    rnd = random.Random(seed)
    assert run_michi(repo, "init").exit_code == 0
    answered: dict[str, int] = {}
    killed: set[str] = set()
    for wave in range(4):
        procs: dict[str, subprocess.Popen[str]] = {}
        for n in range(6):
            label = f"w{wave}-{n}"
            fault = rnd.choice([None] * 8 + ["locked", "spawned", "committed", "pushing", "pushed", "local"])
            procs[label] = spawn_michi(
                repo, "--json", "task", "add", label, env={"MICHI_FAULT": fault} if fault else {}
            )
        victim = rnd.choice([*procs, None])
        if victim is not None:
            doomed = procs[victim]
            until(lambda doomed=doomed: offers(repo) > 0 or doomed.poll() is not None)
            doomed.send_signal(signal.SIGKILL)
        for label, proc in procs.items():
            out, err = proc.communicate(timeout=120)
            if proc.returncode == -signal.SIGKILL:
                killed.add(label)
            else:
                assert proc.returncode == 0, (seed, label, out, err)
                task = json.loads(out)
                assert task["description"] == label, (seed, task)
                answered[label] = int(task["id"])
    assert run_michi(repo, "sync").exit_code == 0
    assert not (repo / ".git/michi/journal.json").exists()
    assert_exactly_once(remote.bare)
    listed = run_michi(repo, "--json", "task", "list", "--no-fetch").json()
    landed = Counter(t["description"] for t in listed)
    assert all(n == 1 for n in landed.values()), (seed, landed)
    ids = {t["description"]: t["id"] for t in listed}
    assert {label: ids.get(label) for label in answered} == answered, seed
    assert set(landed) <= set(answered) | killed, seed
    print(f"{len(answered)} answered, {len(killed)} killed, {len(landed)} landed")


def test_concurrent_claims_in_one_batch_take_distinct_tasks(remote: Remote, repo: Path, cli) -> None:
    assert cli(repo, "init").exit_code == 0  # the setup runs in-process; the claims below do not
    for n in range(4):
        assert cli(repo, "task", "add", f"job {n}").exit_code == 0
    signals = remote.root / "signals"
    first, claims = _cli_batch(
        remote, repo, [["--agent", f"agent-{n}", "task", "next", "--claim"] for n in range(4)]
    )
    (signals / "open").touch()
    assert finish(first)[0] == 0
    outs = [finish(p) for p in claims]
    assert [code for code, _o in outs] == [0] * 4, outs
    assert [o["assignee"] for _c, o in outs] == [f"agent-{n}" for n in range(4)]
    assert sorted(o["description"] for _c, o in outs) == [f"job {n}" for n in range(4)]
    assert pushes(signals) == 2
    assert_exactly_once(remote.bare)


@pytest.mark.parametrize("phase", ["pushed", "local"])
def test_a_waiter_whose_operation_a_killed_holder_pushed_says_it_was_pushed(
    remote: Remote, repo: Path, gated: Path, phase: str
) -> None:
    holder, (batch, waiter) = queue_behind_holder(repo, gated, ["b", "c"], {"b": {"MICHI_FAULT": phase}})
    (gated / "open").touch()
    assert finish(holder)[0] == 0
    assert batch.wait(timeout=120) == -signal.SIGKILL
    code, out = finish(waiter)  # it adopts its own entry and finds it landed by the killed holder
    assert code == 0 and out["result"]["name"] == "c", out
    landed = {oid for oid, _m in michi_commits(remote.bare)}
    assert out["pushed"] and out["commit"] in landed, out
    once(remote.bare)


def test_the_offer_of_a_waiter_killed_before_any_holder_took_it_never_lands(
    remote: Remote, repo: Path, gated: Path
) -> None:
    holder, (victim,) = queue_behind_holder(repo, gated, ["b"])
    victim.kill()  # as a harness's timeout does: the command did nothing, so its caller may run it again
    assert victim.wait() == -signal.SIGKILL and offers(repo) == 1
    (gated / "open").touch()
    assert finish(holder)[0] == 0
    assert start(repo, "c").wait(timeout=120) == 0  # a later holder finds the dead waiter's offer
    assert names_on(remote.bare) == ["a", "c"] and offers(repo) == 0
    once(remote.bare)


def test_a_waiter_in_another_work_tree_moves_its_own_checkout(
    remote: Remote, repo: Path, gated: Path
) -> None:
    git(repo, "checkout", "-qb", "feature")
    wt = remote.root / "wt"
    git(repo, "worktree", "add", "-q", str(wt), "main")
    holder, (batch,) = queue_behind_holder(repo, gated, ["b"])  # b, in `repo`, takes c along
    waiter = start(wt, "c")
    until(lambda: offers(repo) == 2, holder, batch, waiter)
    (gated / "open").touch()
    assert finish(holder)[0] == 0 and finish(batch)[0] == 0
    code, out = finish(waiter)
    assert code == 0 and out["pushed"], out
    # as without group commit: the command run in the work tree of the task branch moved it
    assert git(wt, "rev-parse", "HEAD") == remote.head() and names_on(wt, "HEAD") == ["a", "b", "c"]
    assert not any("another work tree" in n for n in out["notes"]), out
    once(remote.bare)


def test_a_waiter_with_its_own_git_identity_authors_its_commit(
    remote: Remote, repo: Path, gated: Path
) -> None:
    agent = {"GIT_AUTHOR_NAME": "Agent C", "GIT_COMMITTER_NAME": "Agent C"}
    holder, waiters = queue_behind_holder(repo, gated, ["b", "c"], {"c": agent})
    (gated / "open").touch()
    assert [finish(p)[0] for p in [holder, *waiters]] == [0, 0, 0]
    log = git(remote.bare, "log", "--format=%s|%an|%cn", "main").splitlines()
    assert "michi: append c|Agent C|Agent C" in log, log  # as without group commit
    assert "michi: append b|Test Author|Test Committer" in log, log
    once(remote.bare)


def _b_holds_and_is_refused(
    remote: Remote, repo: Path, gated: Path
) -> tuple[subprocess.Popen[str], subprocess.Popen[str], subprocess.Popen[str]]:
    """a holds; b, then c, wait. b holds next and carries c, and its push (the second) is refused by the
    gated hook: b then pushes its own alone, c's is set aside (for its waiter, or the next holder): (a, b,
    c)."""
    hook = remote.bare / "hooks" / "pre-receive"
    hook.write_text(hook.read_text() + 'if [ "$n" = 2 ]; then exit 1; fi\n')
    holder, (batch, waiter) = queue_behind_holder(repo, gated, ["b", "c"], {"b": {"MICHI_PUSH_RETRIES": "1"}})
    return holder, batch, waiter


def test_an_interrupted_waiter_whose_operation_rode_on_a_refused_push_lands_it_and_answers(
    remote: Remote, repo: Path, gated: Path
) -> None:
    """c's Ctrl-C, held since b took its operation, is still held while c lands the operation itself
    after b's push was refused (ADR 0017's path for a holder that gives no answer)."""
    holder, batch, victim = _b_holds_and_is_refused(remote, repo, gated)
    (gated / "gate.1").touch()
    until(lambda: (gated / "reached.2").exists(), batch)  # b's push, carrying c, waits at the remote
    assert offers(repo) == 0  # taken
    victim.send_signal(signal.SIGINT)
    (gated / "gate.2").touch()  # b's push is refused: b pushes its own alone, c's is set aside
    (gated / "open").touch()
    assert finish(holder)[0] == 0 and finish(batch)[0] == 0
    code, out = finish(victim)
    assert code == 0 and out["result"]["name"] == "c" and out["pushed"], out
    assert start(repo, "d").wait(timeout=120) == 0
    assert names_on(remote.bare) == ["a", "b", "c", "d"]  # c landed once
    once(remote.bare)


def test_a_waiter_whose_operation_rode_on_a_refused_push_lands_it_itself(
    remote: Remote, repo: Path, gated: Path
) -> None:
    holder, batch, waiter = _b_holds_and_is_refused(remote, repo, gated)
    (gated / "open").touch()
    assert finish(holder)[0] == 0 and finish(batch)[0] == 0  # b's own, pushed alone after the refusal
    code, out = finish(waiter)  # it adopts the entry its holder set aside, journaled
    assert code == 0 and out["result"]["name"] == "c" and out["pushed"], out
    assert names_on(remote.bare) == ["a", "b", "c"]
    assert not (repo / ".git/michi/journal.json").exists()
    once(remote.bare)


def test_a_command_under_a_scripts_lock_takes_no_offers(remote: Remote, repo: Path, gated: Path) -> None:
    (gated / "open").touch()
    go, done = remote.root / "go", remote.root / "done"
    script = (
        f"until [ -e {go} ]; do sleep 0.01; done; {sys.executable} {DRIVER} {repo} b && : > {done}; "
        f"until [ -e {go}.end ]; do sleep 0.01; done"
    )
    holder = spawn_michi(repo, "lock", "run", "--", "sh", "-c", script)
    until(lambda: (repo / ".michi.lock").exists(), holder)
    waiter = start(repo, "c", env={"MICHI_LOCK_WAIT": "60"})
    until(lambda: offers(repo) == 1, holder, waiter)
    go.touch()
    until(lambda: done.exists(), holder, waiter)
    # the script holds the lock still: nothing of another command may happen under it
    assert waiter.poll() is None and names_on(remote.bare) == ["b"] and offers(repo) == 1
    (remote.root / "go.end").touch()
    assert holder.wait(timeout=120) == 0
    code, out = finish(waiter)
    assert code == 0 and out["result"]["name"] == "c", out
    assert names_on(remote.bare) == ["b", "c"]
    once(remote.bare)


def test_a_waiter_outliving_the_claim_sweep_is_still_answered_once(
    remote: Remote, repo: Path, gated: Path
) -> None:
    holder, (batch, waiter) = queue_behind_holder(repo, gated, ["b", "c"], {"b": {"MICHI_FAULT": "locked"}})
    waiter.send_signal(signal.SIGSTOP)  # c waits a long time (a stopped terminal, a suspended laptop)
    try:
        (gated / "open").touch()
        assert finish(holder)[0] == 0
        assert batch.wait(timeout=120) == -signal.SIGKILL  # b took c, journaled it and died
        (claim,) = (repo / ".git/michi/group").glob("*.taken")
        os.utime(claim, (time.time() - 7200, time.time() - 7200))  # older than the sweep's hour
        # d, out of patience behind c, takes the lock: it lands b's and c's operations
        assert start(repo, "d", env={"MICHI_LOCK_WAIT": "0.5"}).wait(timeout=120) == 0
        assert sorted(names_on(remote.bare)) == ["a", "b", "c", "d"]
    finally:
        waiter.send_signal(signal.SIGCONT)
    code, out = finish(waiter)
    assert code == 0 and out["result"]["name"] == "c" and out["pushed"], out
    assert sorted(names_on(remote.bare)) == ["a", "b", "c", "d"]  # c once
    once(remote.bare)


def test_a_waiter_landed_by_a_dead_holder_is_answered_though_the_next_holder_dies_too(
    remote: Remote, repo: Path, gated: Path
) -> None:
    """b lands c's and d's operations, then dies before answering; d, holding next, finds them landed and
    builds f's, then dies before pushing. c must still get its own answer from the journal (exit 0), not
    "landed, but nobody can say what it did": a landed operation stays journaled until it is answered."""
    faults = {"b": {"MICHI_FAULT": "pushed"}, "d": {"MICHI_FAULT": "committed"}}
    holder, (b, d, c) = queue_behind_holder(repo, gated, ["b", "d", "c"], faults)
    (gated / "gate.1").touch()
    assert finish(holder)[0] == 0
    until(lambda: (gated / "reached.2").exists() and offers(repo) == 0, b, d, c)  # b pushes d and c
    f = start(repo, "f")
    until(lambda: offers(repo) == 1 and queued(repo) == 3, b, d, c, f)
    (gated / "open").touch()
    assert b.wait(timeout=120) == -signal.SIGKILL
    assert d.wait(timeout=120) == -signal.SIGKILL
    code, out = finish(c)
    assert code == 0 and out["result"]["name"] == "c" and out["pushed"], out
    code, out = finish(f)
    assert code == 0 and out["result"]["name"] == "f", out
    assert sorted(names_on(remote.bare)) == ["a", "b", "c", "d", "f"]
    once(remote.bare)


def test_a_holder_that_cannot_write_an_answer_still_succeeds_and_its_waiter_finds_its_change(
    remote: Remote, repo: Path, gated: Path
) -> None:
    """The holder writes each waiter's answer after the push landed: a write that fails then (a full
    disk, a folder in the answer's place) must not turn the holder's landed change into a failure, and the
    waiter, left without an answer, finds its own landed change as for a holder that died (ADR 0017)."""
    holder, (batch, waiter) = queue_behind_holder(repo, gated, ["b", "c"])
    group = repo / ".git/michi/group"
    stem = sorted(os.listdir(group))[1].removesuffix(".offer")  # c's offer: it arrived second
    (group / f"{stem}.answer").mkdir()
    (group / f"{stem}.answer" / "in the way").write_text("x\n")
    (gated / "open").touch()
    assert finish(holder)[0] == 0
    code, out = finish(batch)
    assert code == 0 and out["result"]["name"] == "b", out
    code, out = finish(waiter)
    assert code == 0 and out["result"]["name"] == "c" and out["pushed"], out
    assert sorted(names_on(remote.bare)) == ["a", "b", "c"]
    assert pushes(gated) == 2
    once(remote.bare)


def test_a_file_where_the_group_folder_goes_leaves_commands_working_alone(
    remote: Remote, repo: Path, gated: Path
) -> None:
    """Group commit is an optimisation (ADR 0017): a file where its folder goes made the waiter's offer,
    and every holder's look for offers, exit 1 "please report this as a bug". Without the folder each
    command lands alone, as with `group_commit = false`, and the file stays as it was."""
    group = repo / ".git/michi/group"
    group.parent.mkdir(parents=True, exist_ok=True)
    group.write_text("not michi's folder\n")
    holder = start(repo, "a")
    until(lambda: (gated / "reached.1").exists(), holder)
    waiters = [start(repo, name) for name in "bc"]
    until(lambda: queued(repo) == 2, holder, *waiters)
    (gated / "open").touch()
    assert [finish(p)[0] for p in [holder, *waiters]] == [0, 0, 0]
    assert sorted(names_on(remote.bare)) == ["a", "b", "c"] and pushes(gated) == 3
    once(remote.bare)
    assert group.read_text() == "not michi's folder\n"


def test_a_waiters_operation_the_remote_refuses_never_fails_the_holder_that_took_it(
    remote: Remote, repo: Path
) -> None:
    """The lock's holder took a waiter's operation that the remote's policy refuses: the holder's own,
    innocent one was refused with it (exit 5, quoting the other's problem). Now the holder pushes its own
    alone and lands; the waiter pushes its operation itself and hears the refusal as its own."""
    assert run_michi(repo, "init").exit_code == 0
    assert run_michi(repo, "task", "add", "base").exit_code == 0
    gate, entered, open_ = (remote.root / n for n in ("gate", "entered", "open"))
    hook = remote.bare / "hooks" / "pre-receive"
    hook.write_text(
        "#!/bin/sh\nwhile read old new ref; do\n"
        '  if git diff "$old" "$new" | grep -q FORBIDDEN; then echo "policy: no FORBIDDEN" >&2; exit 1; fi\n'
        f"done\nif [ -e '{gate}' ]; then rm '{gate}'; touch '{entered}'\n"
        f"  while [ ! -e '{open_}' ]; do sleep 0.01; done\nfi\n"
    )
    hook.chmod(0o755)
    gate.touch()
    holder = spawn_michi(repo, "--json", "task", "add", "first holder")
    until(entered.exists, holder)
    innocent = spawn_michi(repo, "--json", "task", "add", "innocent")
    until(lambda: offers(repo) == 1, holder, innocent)
    refused = spawn_michi(repo, "--json", "task", "annotate", "1", "a FORBIDDEN word")
    until(lambda: offers(repo) == 2, holder, innocent, refused)
    open_.touch()
    assert finish(holder)[0] == 0
    code, out = finish(innocent)
    assert code == 0, out
    # Its note says where the other operation went: back to its waiter, which hears the remote's verdict
    # itself. It said "the pending operations stay pending (`michi sync` tries them again)": nothing was.
    note = next(n for n in out["transaction"]["notes"] if "also carried" in n)
    assert "went back to them" in note and "remote's verdict" in note and "pending" not in note, note
    code, out = finish(refused)
    assert code == 5 and out["error"]["code"] == "remote_rejected", out
    listed = run_michi(repo, "--json", "task", "list", "--fetch").json()
    assert sorted(t["description"] for t in listed) == ["base", "first holder", "innocent"]
    assert "FORBIDDEN" not in git(remote.bare, "log", "-p", "main")
    assert_exactly_once(remote.bare)
    assert not (repo / ".git/michi/journal.json").exists()


def test_offers_are_never_written_through_a_linked_group_folder(
    remote: Remote, repo: Path, gated: Path, tmp_path: Path
) -> None:
    """`.git/michi/group` as a link to a folder outside the repository: waiters wrote their operations
    there. Now none is posted through it: each waiter lands its own, in a push of its own."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (repo / ".git/michi").mkdir(exist_ok=True)
    (repo / ".git/michi/group").symlink_to(outside)
    holder = start(repo, "a")
    until(lambda: (gated / "reached.1").exists(), holder)
    waiters = [start(repo, name) for name in ("b", "c")]
    until(lambda: queued(repo) == 2, holder, *waiters)
    assert list(outside.iterdir()) == []
    (gated / "open").touch()
    assert finish(holder)[0] == 0 and all(finish(w)[0] == 0 for w in waiters)
    assert sorted(names_on(remote.bare)) == ["a", "b", "c"] and pushes(gated) == 3
    assert list(outside.iterdir()) == []
    once(remote.bare)
