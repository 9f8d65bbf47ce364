"""Several clones pushing to one remote at once: every operation lands, however often it loses the race
(ADR 0004: after `push_retries` refused pushes a clone takes its turn on the remote, and the others wait
for it instead of racing it).

Real clones, real michi processes, a remote whose pre-receive hook holds each push a little while, so that
pushes built on one tip overlap and all but one are refused. Bounded: CLONES x ADDS operations, each
process under a timeout.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest
from conftest import Remote, git, run_michi

from michi import git as mgit

CLONES = 4
ADDS = 3


def _slow_remote(bare: Path) -> None:
    """Each push waits 0.3 s in the remote's hook before its ref update: the clones' pushes overlap."""
    hook = bare / "hooks" / "pre-receive"
    hook.write_text("#!/bin/sh\nsleep 0.3\n")
    hook.chmod(0o755)


def _remote_tasks(bare: Path) -> list[dict[str, object]]:
    files = git(bare, "ls-tree", "-r", "--name-only", "main").split()
    return [
        json.loads(git(bare, "show", f"main:{f}"))
        for f in files
        if f.startswith(".tasks/") and f.endswith(".json")
    ]


def test_contending_clones_each_land_every_add_with_few_retries(remote: Remote) -> None:
    first = remote.clone("c0")
    assert run_michi(first, "init").exit_code == 0
    clones = [first] + [remote.clone(f"c{n}") for n in range(1, CLONES)]
    _slow_remote(remote.bare)
    env = {"MICHI_PUSH_RETRIES": "2"}
    failures: list[str] = []
    reported: dict[str, str] = {}
    start = threading.Barrier(CLONES)

    def agent(n: int) -> None:
        start.wait()
        for k in range(ADDS):
            what = f"clone {n} add {k}"
            out = run_michi(clones[n], "--json", "task", "add", what, env=env, timeout=120)
            if out.exit_code != 0:
                failures.append(f"{what}: exit {out.exit_code}: {(out.stdout + out.stderr).strip()[:300]}")
                continue
            reported[str(out.json()["uuid"])] = what

    threads = [threading.Thread(target=agent, args=(n,)) for n in range(CLONES)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
    landed = _remote_tasks(remote.bare)
    assert sorted(str(t["description"]) for t in landed) == sorted(reported.values())
    assert {str(t["uuid"]): str(t["description"]) for t in landed} == reported
    assert len(reported) == CLONES * ADDS
    # the turn is given back with the push that used it: nothing of it is left on the remote
    assert git(remote.bare, "for-each-ref", "refs/michi/") == ""


def test_a_turn_left_by_a_dead_holder_is_taken_over_and_ends_with_the_push(remote: Remote) -> None:
    """A turn on the remote whose holder is gone: a clone refused once (push_retries 1) waits for it,
    sees it unchanged for `turn.STALE_AFTER` seconds, takes it over, lands, and the push deletes it."""
    one = remote.clone("one")
    assert run_michi(one, "init").exit_code == 0
    two = remote.clone("two")
    assert run_michi(one, "task", "add", "theirs").exit_code == 0  # two's last-known tip is stale now
    record = git(
        one,
        "commit-tree",
        git(one, "hash-object", "-w", "-t", "tree", "/dev/null"),
        "-m",
        "a dead holder's turn",
        env={},
    )
    git(one, "push", "-q", "origin", f"{record}:refs/michi/turn/main")
    stale = {"MICHI_PUSH_RETRIES": "1", "MICHI_TURN_STALE": "5"}  # 60 s by default
    out = run_michi(two, "--json", "task", "add", "mine", env=stale, timeout=120)
    assert out.exit_code == 0, out.stdout + out.stderr
    assert sorted(str(t["description"]) for t in _remote_tasks(remote.bare)) == ["mine", "theirs"]
    assert git(remote.bare, "for-each-ref", "refs/michi/") == ""


def test_a_push_that_checks_the_turn_is_refused_while_another_clone_holds_it(remote: Remote) -> None:
    """The branch's push with the turn ref's deletion leased on "absent" (`--atomic`): refused as stale
    while a turn is held, and a no-op beside the branch's update once none is; the holder's own lease
    ends its turn with the push that lands."""
    work = remote.clone("work")
    repo = mgit.open_repo(work)
    turn = "refs/michi/turn/main"
    tip = git(work, "commit-tree", "HEAD^{tree}", "-p", "HEAD", "-m", "one")
    record = git(work, "commit-tree", git(work, "hash-object", "-w", "-t", "tree", "/dev/null"), "-m", "turn")
    git(work, "push", "-q", "origin", f"{record}:{turn}")
    base = git(work, "rev-parse", "HEAD")
    refused = mgit.push(repo, "origin", tip, "main", {}, release=(turn, ""), built_on=base)
    assert (refused.ok, refused.stale) == (False, True)
    assert remote.head() != tip and git(remote.bare, "rev-parse", turn) == record
    landed = mgit.push(repo, "origin", tip, "main", {}, release=(turn, record), built_on=base)  # the holder's
    assert landed.ok and remote.head() == tip
    assert git(remote.bare, "for-each-ref", "refs/michi/") == ""
    after = git(work, "commit-tree", "HEAD^{tree}", "-p", tip, "-m", "two")
    assert mgit.push(repo, "origin", after, "main", {}, release=(turn, ""), built_on=tip).ok  # no turn: lands
    assert remote.head() == after and git(remote.bare, "for-each-ref", "refs/michi/") == ""


def test_a_push_cut_off_after_it_landed_is_found_landed_not_pushed_blind(
    cli, remote: Remote, monkeypatch
) -> None:
    """A contended clone pushes with the turn ref's lease. When that push is cut off after the remote
    took it (`connected`), the remote must be asked whether it landed: pushing again without the lease,
    and then failing to connect, had dropped the journal's entry and told the agent to retry a change
    that was already on the remote (a retry would add the task twice)."""
    from michi.errors import RemoteUnreachable

    work = remote.clone("work")
    assert cli(work, "init").exit_code == 0
    (work / ".git" / "michi" / "contended").touch()  # a push of this clone was refused a moment ago
    real = mgit.push
    calls: list[object] = []

    def cut_off(*args: object, **kw: object) -> object:
        calls.append(kw.get("release"))
        if len(calls) == 1:
            real(*args, **kw)  # it lands, and then the connection breaks
            error = RemoteUnreachable("the connection was reset")
            error.connected = True
            raise error
        raise RemoteUnreachable("could not connect")

    monkeypatch.setattr(mgit, "push", cut_off)
    out = cli(work, "--json", "task", "add", "once")
    assert out.exit_code == 0, out.stdout
    assert calls[0] is not None and len(calls) == 1  # the lease rode on it; nothing pushed blind
    assert [t["description"] for t in _remote_tasks(remote.bare)] == ["once"]


def test_waiting_on_a_turn_the_remote_keeps_locked_ends_and_does_not_hammer(
    remote: Remote, monkeypatch
) -> None:
    """A turn that looks stale but cannot be cleared (the remote keeps its ref locked: a receive-pack
    killed mid-update leaves `<ref>.lock`) is waited for as a held one: a pause between looks, and the
    command gives up when its wait is over. Asking again at once made ~100 pushes in 15 s, for ever."""
    from michi.errors import GitFailed
    from michi.git import lockref
    from michi.workflow import turn

    work = remote.clone("work")
    record = git(work, "commit-tree", git(work, "hash-object", "-w", "-t", "tree", "/dev/null"), "-m", "turn")
    git(work, "push", "-q", "origin", f"{record}:refs/michi/turn/main")
    (remote.bare / "refs" / "michi" / "turn" / "main.lock").write_text("")  # left by a killed update
    swaps: list[object] = []
    real = lockref.cas_push

    def counted(*args: object, **kw: object) -> object:
        swaps.append(args)
        assert len(swaps) < 40, "asked the remote again and again without a pause"
        return real(*args, **kw)

    monkeypatch.setattr(lockref, "cas_push", counted)
    monkeypatch.setattr(turn, "WAIT_FOR", 2.0)
    monkeypatch.setenv("MICHI_TURN_STALE", "0")
    waiter = turn.Turn(work, work / ".git", "origin", "main", None)
    with pytest.raises(GitFailed) as refused:
        waiter.wait(want=False)
    assert refused.value.code == "push_retries_exhausted"
    assert 1 <= len(swaps) < 40


def _push_turn(work: Path, data: dict[str, object]) -> str:
    from michi.git import lockref

    record = lockref.write_record(work, work / ".git", json.dumps(data), "michi: turn to push")
    assert lockref.cas_push(work, "origin", "refs/michi/turn/main", record, None).ok
    return record


@pytest.mark.parametrize("want", [False, True])
def test_a_turn_whose_holder_died_on_this_machine_is_cleared_at_once(
    remote: Remote, monkeypatch, want: bool
) -> None:
    """A turn whose record names a process of this machine that is gone (SIGKILLed while it held the
    turn) is cleared (or taken over) once a waiter has read the record, not after `STALE_AFTER`: with
    turns taken after one refused push, a killed holder had the other clones wait out 60 s."""
    import subprocess

    from michi.workflow import turn

    holder = remote.clone("holder")
    dead = subprocess.Popen(["sleep", "600"])
    data = turn.holder(dead.pid)
    dead.kill()
    dead.wait()
    record = _push_turn(holder, data)
    monkeypatch.setenv("MICHI_TURN_STALE", "3600")  # never stale by age within this test
    monkeypatch.setattr(turn, "WAIT_FOR", 30.0)
    monkeypatch.setattr(turn, "JUDGE_AFTER", 0.2)
    waiter_clone = remote.clone("waiter")  # has no copy of the record: it must fetch it to read it
    waiter = turn.Turn(waiter_clone, waiter_clone / ".git", "origin", "main", None)
    waiter.wait(want=want)
    now = git(remote.bare, "for-each-ref", "--format=%(objectname)", "refs/michi/turn/main")
    if want:
        assert waiter.mine is not None and now == waiter.mine != record
    else:
        assert waiter.mine is None and now == ""


def test_a_turn_whose_holder_lives_is_waited_for(remote: Remote, monkeypatch) -> None:
    """A live holder's turn is not cleared however long a waiter reads its record (until `STALE_AFTER`)."""
    import os

    from michi.errors import GitFailed
    from michi.workflow import turn

    holder = remote.clone("holder")
    record = _push_turn(holder, turn.holder(os.getpid()))  # this very process: alive
    monkeypatch.setenv("MICHI_TURN_STALE", "3600")
    monkeypatch.setattr(turn, "WAIT_FOR", 1.5)
    monkeypatch.setattr(turn, "JUDGE_AFTER", 0.1)
    waiter_clone = remote.clone("waiter")
    waiter = turn.Turn(waiter_clone, waiter_clone / ".git", "origin", "main", None)
    with pytest.raises(GitFailed) as waited:
        waiter.wait(want=True)
    assert waited.value.code == "push_retries_exhausted"
    assert git(remote.bare, "rev-parse", "refs/michi/turn/main") == record


@pytest.mark.parametrize(
    "text", ["[" * 100_000 + "]" * 100_000, '{"host": "' + "h" * 3_000_000 + '"}'], ids=["deep", "megabytes"]
)
def test_a_turn_record_michi_did_not_write_is_waited_out_never_a_crash(
    remote: Remote, monkeypatch, text: str
) -> None:
    """Anyone who can push writes the turn ref: a record nested deeper than Python's stack once raised
    RecursionError out of the waiter (exit 1), and one of megabytes was read whole. Neither names a
    process provably gone, so it is waited for as any live holder's, until `STALE_AFTER`."""
    from michi.errors import GitFailed
    from michi.git import lockref
    from michi.workflow import turn

    holder = remote.clone("holder")
    record = lockref.write_record(holder, holder / ".git", text, "not michi's")
    assert lockref.cas_push(holder, "origin", "refs/michi/turn/main", record, None).ok
    monkeypatch.setenv("MICHI_TURN_STALE", "3600")
    monkeypatch.setattr(turn, "WAIT_FOR", 1.5)
    monkeypatch.setattr(turn, "JUDGE_AFTER", 0.1)
    waiter_clone = remote.clone("waiter")
    waiter = turn.Turn(waiter_clone, waiter_clone / ".git", "origin", "main", None)
    with pytest.raises(GitFailed) as waited:
        waiter.wait(want=True)
    assert waited.value.code == "push_retries_exhausted"
    assert git(remote.bare, "rev-parse", "refs/michi/turn/main") == record


def test_only_a_holder_provably_gone_is_judged_gone() -> None:
    """Dead or reused PIDs on this machine are gone; another host, boot or PID namespace, a record
    without start ticks or not a record at all can only go stale."""
    import os
    import subprocess

    from michi.workflow import turn

    me = turn.holder(os.getpid())
    assert isinstance(me["ticks"], int)
    assert not turn.gone(me)
    assert turn.gone({**me, "ticks": me["ticks"] + 1})  # the PID is another process's now
    dead = subprocess.Popen(["sleep", "600"])
    was = turn.holder(dead.pid)
    dead.kill()
    dead.wait()
    assert turn.gone(was)
    for other in ({"host": "elsewhere"}, {"boot": "another-boot"}, {"pidns": "pid:[1]"}, {"ticks": None}):
        assert not turn.gone({**was, **other})
    assert not turn.gone({k: v for k, v in was.items() if k != "ticks"})
    assert not turn.gone(None) and not turn.gone([was]) and not turn.gone({**was, "pid": "1"})


def test_a_turn_taken_by_another_process_of_this_clone_is_this_clones(remote: Remote, monkeypatch) -> None:
    """A turn is the clone's: its processes are ordered by the clone's lock, so one of them finds the
    record another took and uses it as its own (but never gives it back for the taker), while another
    clone still waits it out."""
    import os

    from michi.errors import GitFailed
    from michi.workflow import turn

    monkeypatch.setenv("MICHI_TURN_STALE", "3600")
    monkeypatch.setattr(turn, "JUDGE_AFTER", 3600.0)
    one = remote.clone("one")
    taker = turn.Turn(one, one / ".git", "origin", "main", None)
    taker.wait(want=True)
    record = taker.mine
    assert record is not None and json.loads(git(one, "show", f"{record}:owner.json"))["pid"] == os.getpid()
    sibling = turn.Turn(one, one / ".git", "origin", "main", None)  # another process of the same clone
    sibling.wait(want=False, limit=5.0)
    assert sibling.mine == record and sibling.release() == ("refs/michi/turn/main", record)
    sibling.give_back()  # its command failed, or a holder did its operation: the taker's turn stays
    assert git(remote.bare, "rev-parse", "refs/michi/turn/main") == record
    other = remote.clone("other")
    stranger = turn.Turn(other, other / ".git", "origin", "main", None)
    with pytest.raises(GitFailed):
        stranger.wait(want=False, limit=0.5)
    assert stranger.mine is None


def test_a_command_lands_through_a_turn_its_own_clone_holds(remote: Remote) -> None:
    """A clone's lock holder whose push would be refused by a turn that another process of its own clone
    took (and that process waits for this very lock) uses that turn: it lands and ends the turn. Before,
    both waited on each other until the holder gave up (`push_retries_exhausted`)."""
    from michi.workflow import turn

    work = remote.clone("work")
    assert run_michi(work, "init").exit_code == 0
    taker = turn.Turn(work, work / ".git", "origin", "main", None)
    taker.wait(want=True)  # this test process: alive, of this clone, never pushing
    (work / ".git" / "michi" / "contended").touch()  # refused lately: the command looks at turns
    out = run_michi(work, "--json", "task", "add", "through", env={"MICHI_TURN_STALE": "3600"}, timeout=60)
    assert out.exit_code == 0, out.stdout + out.stderr
    assert [t["description"] for t in _remote_tasks(remote.bare)] == ["through"]
    assert git(remote.bare, "for-each-ref", "refs/michi/") == ""  # the landing push ended the turn


def _logged_remote(bare: Path) -> Path:
    """The remote's pre-receive hook appends each push's ref updates ("old new ref" lines) and a line
    "--" to a log: one block per push, in the order the remote took them."""
    log = bare / "pushes.log"
    hook = bare / "hooks" / "pre-receive"
    hook.write_text(f"#!/bin/sh\ncat >> '{log}'\necho -- >> '{log}'\n")
    hook.chmod(0o755)
    return log


def _pushes(log: Path) -> list[dict[str, tuple[str, str]]]:
    blocks = log.read_text().split("--\n") if log.exists() else []
    return [
        {ref: (old, new) for old, new, ref in (line.split() for line in block.splitlines())}
        for block in blocks
        if block.strip()
    ]


def test_a_clone_refused_lately_queues_for_its_turn_before_it_pushes(remote: Remote) -> None:
    """Under contention a queue beats a race: a clone whose push was refused lately takes its turn on the
    remote before its first push, instead of racing the other clones' pushes (each of which the remote
    had received and checked whole before refusing all but one); its landing push ends the turn."""
    work = remote.clone("work")
    assert run_michi(work, "init").exit_code == 0
    log = _logged_remote(remote.bare)
    (work / ".git" / "michi" / "contended").touch()
    out = run_michi(work, "--json", "task", "add", "queued", timeout=60)
    assert out.exit_code == 0, out.stdout + out.stderr
    zero = "0" * 40
    pushes = _pushes(log)
    assert len(pushes) == 2, pushes
    taken, landed = pushes
    assert list(taken) == ["refs/michi/turn/main"] and taken["refs/michi/turn/main"][0] == zero
    record = taken["refs/michi/turn/main"][1]
    assert landed["refs/michi/turn/main"] == (record, zero) and "refs/heads/main" in landed
    assert [t["description"] for t in _remote_tasks(remote.bare)] == ["queued"]
    assert git(remote.bare, "for-each-ref", "refs/michi/") == ""


def test_a_command_that_waited_out_another_clones_turn_keeps_its_clone_contended(remote: Remote) -> None:
    """Contention is remembered for a minute after a refused push (`.git/michi/contended`); a command
    that had to wait for another clone's turn renews it, so that a clone whose pushes are never refused
    any more (it queues) does not fall back to racing while the others still push."""
    import os
    import time

    holder = remote.clone("holder")
    _push_turn(holder, {"host": "elsewhere", "pid": 1})  # not judged here: goes stale only
    work = remote.clone("work")
    assert run_michi(work, "init").exit_code == 0
    marker = work / ".git" / "michi" / "contended"
    marker.touch()
    before = time.time() - 50
    os.utime(marker, (before, before))  # refused 50 s ago: still contended, not for long
    out = run_michi(work, "--json", "task", "add", "waited", env={"MICHI_TURN_STALE": "1"}, timeout=60)
    assert out.exit_code == 0, out.stdout + out.stderr
    assert marker.stat().st_mtime > before + 40
    assert [t["description"] for t in _remote_tasks(remote.bare)] == ["waited"]
    assert git(remote.bare, "for-each-ref", "refs/michi/") == ""


def test_a_clones_name_is_made_once_and_a_copy_of_the_clone_is_another(tmp_path: Path) -> None:
    """Threads of one process (an MCP server's calls) making the name at once all get the one the file
    holds; a damaged file (empty: a writer killed midway) is replaced, never read as the name; a copy of
    the git folder (`cp -a`, a snapshot: its own lock) carries the same file but is another clone."""
    import shutil
    from concurrent.futures import ThreadPoolExecutor

    from michi.workflow import turn

    for trial in range(20):
        common = tmp_path / f"t{trial}" / ".git"
        common.mkdir(parents=True)
        with ThreadPoolExecutor(8) as pool:
            names = set(pool.map(turn.clone_id, [common] * 8))
        assert len(names) == 1 and "" not in names
        assert names.pop().startswith((common / "michi" / "clone-id").read_text().strip() + ".")
        assert sorted(p.name for p in (common / "michi").iterdir()) == ["clone-id"]  # no drafts left
    common = tmp_path / "t0" / ".git"
    name = turn.clone_id(common)
    assert turn.clone_id(common) == name
    copy = tmp_path / "copy" / ".git"
    shutil.copytree(common, copy)
    assert turn.clone_id(copy) not in ("", name)
    (common / "michi" / "clone-id").write_text("")  # damaged
    remade = turn.clone_id(common)
    assert remade not in ("", name) and turn.clone_id(common) == remade


def test_a_signal_while_waiting_for_a_turn_stops_the_command(remote: Remote) -> None:
    """Waiting for this clone's turn before the lock only saves work later, so its failures are passed
    over; a SIGTERM there (`Terminated`, a MichiError) was passed over with them, and the command went on
    to take the lock and push. It stops the command as Ctrl-C does: exit 130, nothing landed."""
    import os
    import signal
    import time

    from conftest import spawn_michi

    from michi.workflow import turn

    holder = remote.clone("holder")
    assert run_michi(holder, "init").exit_code == 0
    record = _push_turn(holder, turn.holder(os.getpid()))  # this very process: alive, never cleared
    work = remote.clone("work")
    (work / ".git" / "michi").mkdir(exist_ok=True)
    (work / ".git" / "michi" / "contended").touch()  # refused lately: queue for the turn first
    before = remote.head()
    proc = spawn_michi(work, "--json", "task", "add", "never", env={"MICHI_TURN_STALE": "3600"})
    deadline = time.monotonic() + 30
    while git(work, "cat-file", "-t", record, check=False) != "commit":  # it read the holder's record
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.02)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, out + err
    assert json.loads(out)["error"]["code"] == "terminated"
    assert remote.head() == before and git(remote.bare, "rev-parse", "refs/michi/turn/main") == record
