"""The remote lock (ADR 0009) against real bare remotes on disk: compare-and-swap exclusivity between
racing processes, fences, the script verbs, status and stats, and its errors."""

from __future__ import annotations

import json
import multiprocessing
import os
import subprocess
import sys
import time
from multiprocessing.synchronize import Event
from pathlib import Path
from typing import Any

import pytest
from conftest import CliResult, Remote, git, run_michi

from michi.lock.errors import LockLost, LockTimeout
from michi.lock.remote import RemoteLock
from michi.lock.remote_record import REF
from michi.repo import find_repo

CTX = multiprocessing.get_context("fork")


def remote_lock(clone: Path, ttl: float = 30.0) -> RemoteLock:
    return RemoteLock(find_repo(clone), remote="origin", ttl=ttl, command="test", agent=None)


def record_on(bare: Path) -> dict[str, Any]:
    return json.loads(git(bare, "show", f"{REF}:owner.json"))


def _one_try(clone: Path, go: Event, results: Any) -> None:
    lock = remote_lock(clone)
    go.wait()
    try:
        record = lock.acquire(0)
    except LockTimeout:
        results.put(("busy", None))
        return
    results.put(("won", record.fence))


def race_once(clones: list[Path], per_clone: int) -> list[tuple[str, int | None]]:
    go, results = CTX.Event(), CTX.Queue()
    procs = [CTX.Process(target=_one_try, args=(c, go, results)) for c in clones for _ in range(per_clone)]
    for p in procs:
        p.start()
    go.set()
    outcomes = [results.get(timeout=120) for _ in procs]
    for p in procs:
        p.join(timeout=30)
    return outcomes


def test_exactly_one_of_many_racing_clones_wins_creation_and_each_release(remote: Remote) -> None:
    clones = [remote.clone(f"c{i}") for i in range(4)]
    expected_fence = 1
    for _round in range(3):  # the first round creates the ref, the others swap a free record
        outcomes = race_once(clones, per_clone=2)
        winners = [fence for kind, fence in outcomes if kind == "won"]
        assert winners == [expected_fence], outcomes
        record = record_on(remote.bare)
        assert record["state"] == "held" and record["fence"] == expected_fence
        # Release as its holder would (the winner's process has exited): by its token.
        out = run_michi(clones[0], "--json", "lock", "release", "--remote", "--token", record["token"])
        assert out.exit_code == 0, out.stderr
        assert record_on(remote.bare)["state"] == "free"
        expected_fence += 1


def test_fences_rise_across_clones_and_the_free_record_keeps_the_last(remote: Remote) -> None:
    a, b = remote.clone("a"), remote.clone("b")
    fences = []
    for clone in (a, b, a, b):
        out = run_michi(clone, "lock", "run", "--remote", "--", "sh", "-c", 'echo "$MICHI_LOCK_FENCE"')
        assert out.exit_code == 0, out.stderr
        fences.append(int(out.stdout))
    assert fences == [1, 2, 3, 4]
    free = record_on(remote.bare)
    assert free["state"] == "free" and free["fence"] == 4
    # Old records are parentless commits: once the ref moves on, nothing keeps them reachable.
    assert git(remote.bare, "rev-list", "--count", REF) == "1"


def test_a_held_lock_is_busy_with_the_holders_details(remote: Remote) -> None:
    a, b = remote.clone("a"), remote.clone("b")
    token = run_michi(a, "lock", "acquire", "--remote", "--ttl", "60", "--agent", "bot-a").stdout.strip()
    busy = run_michi(b, "--json", "lock", "run", "--remote", "--wait", "0.3", "--", "true")
    assert busy.exit_code == 75
    error = busy.json()["error"]
    assert error["code"] == "lock_busy"
    assert error["holder"]["agent"] == "bot-a" and error["holder"]["fence"] == 1
    assert error["waited"] >= 0.3
    assert "token" not in error["holder"]  # the token releases the lock: never shown to others
    status = run_michi(b, "--json", "lock", "status", "--remote").json()
    assert status["held"] is True and status["fence"] == 1 and status["stale"] is False
    assert status["holder"]["agent"] == "bot-a" and status["expires"] and status["age"] >= 0
    assert status["holder_running"] is True  # the holder is this test process, on this host
    human = run_michi(b, "lock", "status", "--remote")
    assert "bot-a" in human.stdout and "fence    1" in human.stdout
    assert run_michi(a, "lock", "release", "--remote", "--token", token).exit_code == 0
    assert run_michi(b, "--json", "lock", "status", "--remote").json()["held"] is False
    gone = subprocess.Popen(["true"])
    gone.wait()
    run_michi(a, "lock", "acquire", "--remote", "--pid", str(gone.pid))
    status = run_michi(b, "--json", "lock", "status", "--remote").json()
    assert status["held"] is True and status["holder_running"] is False and status["stale"] is False
    assert "is not running on this host" in run_michi(b, "lock", "status", "--remote").stdout


def test_script_verbs_check_the_token(remote: Remote) -> None:
    a = remote.clone("a")
    acquired = run_michi(a, "--json", "lock", "acquire", "--remote", "--ttl", "60").json()
    token, fence = acquired["token"], acquired["fence"]
    wrong = run_michi(a, "--json", "lock", "renew", "--remote", "--token", "0" * 32)
    assert wrong.exit_code == 4 and wrong.json()["error"]["code"] == "lock_not_owned"
    wrong = run_michi(a, "--json", "lock", "release", "--remote", "--token", "0" * 32)
    assert wrong.exit_code == 4 and wrong.json()["error"]["code"] == "lock_not_owned"
    before = git(remote.bare, "rev-parse", REF)
    renewed = run_michi(a, "--json", "lock", "renew", "--remote", "--token", token)
    assert renewed.exit_code == 0, renewed.stdout
    assert renewed.json()["fence"] == fence  # a renewal keeps the fence, but is a new commit
    assert git(remote.bare, "rev-parse", REF) != before
    assert record_on(remote.bare)["ttl"] == 60.0  # --ttl of acquire is kept unless renew names one
    released = run_michi(a, "--json", "lock", "release", "--remote", "--token", token).json()
    assert released["released"] is True and released["why"] == "token"
    again = run_michi(a, "--json", "lock", "release", "--remote", "--token", token).json()
    assert again["released"] is False  # idempotent


def test_force_release_of_a_live_lock_needs_yes_and_of_a_stale_one_not(remote: Remote) -> None:
    a, b = remote.clone("a"), remote.clone("b")
    run_michi(a, "lock", "acquire", "--remote", "--ttl", "60")
    live = run_michi(b, "--json", "lock", "release", "--remote", "--force")
    assert live.exit_code == 4 and live.json()["error"]["code"] == "lock_live"
    forced = run_michi(b, "--json", "lock", "release", "--remote", "--force", "--yes").json()
    assert forced["released"] is True and forced["why"] == "forced"
    # A lease of 1 s that nobody renews: stale once this machine has seen it unchanged for 1 s.
    run_michi(a, "lock", "acquire", "--remote", "--ttl", "1")
    first = run_michi(b, "--json", "lock", "status", "--remote").json()
    assert first["held"] is True
    while not run_michi(b, "--json", "lock", "status", "--remote").json()["stale"]:
        pass  # each status is a fresh process: the observation persists between them
    stale = run_michi(b, "--json", "lock", "release", "--remote", "--force").json()
    assert stale["released"] is True and stale["why"] == "stale"
    assert record_on(remote.bare)["fence"] == 2


def test_expiry_is_judged_by_the_observers_stopwatch_not_by_wall_clocks(remote: Remote) -> None:
    a, b = remote.clone("a"), remote.clone("b")
    run_michi(a, "lock", "acquire", "--remote", "--ttl", "1")
    # The holder's wall clock said the lease ends in 1 s; a record whose `expires` is long past (a
    # holder whose clock runs behind, or far ahead) changes nothing: only unchanged time counts.
    lock = remote_lock(b)
    view = lock.read()
    assert view.held and not view.expired and view.unchanged_for < 1.0
    started = time.monotonic()
    record = lock.acquire(30)
    assert time.monotonic() - started >= 1.0 - view.unchanged_for - 0.01
    assert record.fence == 2
    assert lock.stats["takeover"] == "expired"
    lock.release()


def test_unreadable_record_is_reported_and_replaced_only_when_told(remote: Remote) -> None:
    a = remote.clone("a")
    (a / "owner.json").write_text('{"fence": 7, "not": "a record"}\n')
    blob = git(a, "hash-object", "-w", "owner.json")
    tree = _mktree(a, blob)
    commit = git(a, "commit-tree", tree, "-m", "by hand")
    git(a, "push", "-q", "origin", f"{commit}:{REF}")
    status = run_michi(a, "--json", "lock", "status", "--remote")
    assert status.exit_code == 4 and status.json()["error"]["code"] == "lock_record_corrupt"
    refused = run_michi(a, "--json", "lock", "release", "--remote", "--force")
    assert refused.exit_code == 4
    replaced = run_michi(a, "--json", "lock", "release", "--remote", "--force", "--yes").json()
    assert replaced["released"] is True and replaced["fence"] == 7
    out = run_michi(a, "lock", "run", "--remote", "--", "sh", "-c", 'echo "$MICHI_LOCK_FENCE"')
    assert out.stdout.strip() == "8"  # fences keep rising past the hand-written record


GOOD_RECORD = (
    '{"state": "held", "fence": 7, "token": "t", "host": "h", "pid": 1, "command": "c", '
    '"created": "20250101T000000Z", "renewed": "20250101T000000Z", "expires": null, "ttl": 30'
)


@pytest.mark.parametrize(
    "text",
    [
        GOOD_RECORD.replace('"fence": 7', '"fence": 1e999') + "}",
        GOOD_RECORD.replace('"ttl": 30', '"ttl": NaN') + "}",
        GOOD_RECORD.replace('"fence": 7', '"fence": 7.5') + "}",
        GOOD_RECORD + ', "x": ' + "[" * 100_000 + "]" * 100_000 + "}",
        GOOD_RECORD.replace('"fence": 7', '"fence": ' + "9" * 5000) + "}",
        GOOD_RECORD.replace('"command": "c"', '"command": "' + "c" * 30_000_000 + '"') + "}",
    ],
    ids=["fence_infinite", "ttl_nan", "fence_fraction", "deep", "fence_huge", "thirty_megabytes"],
)
def test_a_hostile_record_is_lock_record_corrupt_never_a_crash(remote: Remote, text: str) -> None:
    """Anyone who can push can write the ref: what michi did not write is `lock_record_corrupt` (exit 4),
    never an exit 1 nor `NaN` (not JSON) in the --json document; `--force --yes` still clears it."""
    a = remote.clone("a")
    (a / "owner.json").write_text(text + "\n")
    commit = git(a, "commit-tree", _mktree(a, git(a, "hash-object", "-w", "owner.json")), "-m", "by hand")
    git(a, "push", "-q", "origin", f"{commit}:{REF}")
    status = run_michi(a, "--json", "lock", "status", "--remote")
    assert status.exit_code == 4, status.stdout + status.stderr
    assert status.json()["error"]["code"] == "lock_record_corrupt"
    busy = run_michi(a, "--json", "lock", "run", "--remote", "--wait", "0", "--", "true")
    assert busy.exit_code == 4 and busy.json()["error"]["code"] == "lock_record_corrupt", busy.stdout
    replaced = run_michi(a, "--json", "lock", "release", "--remote", "--force", "--yes")
    assert replaced.exit_code == 0 and replaced.json()["released"] is True, replaced.stdout


@pytest.mark.parametrize("since", [-1e18, True, 1e18])
def test_an_impossible_first_sighting_never_makes_a_live_lock_stale(remote: Remote, since: Any) -> None:
    """The shared sightings file says when this boot first saw the record. A reading no stopwatch of this
    boot can give (before the boot, a bool, in the future) is ignored: taken at its word, a live lock
    was stale at once, and anyone could take it over."""
    from michi.lock.record import boot_id
    from michi.lock.remote_seen import SEEN_FILE

    a, b = remote.clone("a"), remote.clone("b")
    token = run_michi(a, "lock", "acquire", "--remote", "--ttl", "600").stdout.strip()
    assert run_michi(b, "--json", "lock", "status", "--remote").json()["stale"] is False
    seen = b / ".git" / "michi" / SEEN_FILE
    data = json.loads(seen.read_text())
    for entry in data.values():
        assert entry["boot"] == boot_id()
        entry["since"] = since
    seen.write_text(json.dumps(data))
    status = run_michi(b, "--json", "lock", "status", "--remote").json()
    assert status["held"] is True and status["stale"] is False, status
    taken = run_michi(b, "--json", "lock", "run", "--remote", "--wait", "0", "--", "true")
    assert taken.exit_code == 75, taken.stdout
    assert run_michi(a, "lock", "release", "--remote", "--token", token).exit_code == 0


def _no_record(repo: Path, kind: str) -> str:
    """An object the lock ref can name that holds no owner.json file."""
    empty = git(repo, "mktree")
    if kind == "blob":
        return git(repo, "hash-object", "-w", "--stdin")
    if kind == "folder":
        tree = subprocess.run(
            ["git", "mktree"],
            cwd=repo,
            input=f"040000 tree {empty}\towner.json\n",
            capture_output=True,
            text=True,
        ).stdout.strip()
        return git(repo, "commit-tree", tree, "-m", "a folder by that name")
    return git(repo, "commit-tree", empty, "-m", "no record")


@pytest.mark.parametrize("kind", ["commit", "blob", "folder"])
def test_a_ref_without_a_record_file_is_lock_record_corrupt(remote: Remote, kind: str) -> None:
    """The ref names an object this clone has fetched but with no owner.json in it: a corrupt record
    (exit 4, and `--force --yes` clears it), never `remote_unreachable` "kept moving" (exit 5, retry)."""
    a = remote.clone("a")
    git(a, "push", "-q", "origin", f"{_no_record(a, kind)}:{REF}")
    b = remote.clone("b")  # a clone that has never fetched it
    status = run_michi(b, "--json", "lock", "status", "--remote")
    assert status.exit_code == 4, status.stdout
    assert status.json()["error"]["code"] == "lock_record_corrupt"
    replaced = run_michi(b, "--json", "lock", "release", "--remote", "--force", "--yes")
    assert replaced.exit_code == 0 and replaced.json()["released"] is True, replaced.stdout
    assert run_michi(b, "--json", "lock", "run", "--remote", "--wait", "0", "--", "true").exit_code == 0


def _mktree(repo: Path, blob: str) -> str:
    proc = subprocess.run(
        ["git", "mktree"], cwd=repo, input=f"100644 blob {blob}\towner.json\n", capture_output=True, text=True
    )
    return proc.stdout.strip()


@pytest.mark.parametrize(
    ("args", "code", "exit_code"),
    [
        # a lease that never ends is refused for every lock, as the option's value (ADR 0003)
        (["lock", "run", "--remote", "--ttl", "0", "--", "true"], "usage", 2),
        (["lock", "status", "--remote"], "usage", 2),  # no remote named origin
    ],
)
def test_usage_errors(local_repo: Path, args: list[str], code: str, exit_code: int) -> None:
    if "--ttl" in args:
        git(local_repo, "remote", "add", "origin", str(local_repo))
    out: CliResult = run_michi(local_repo, "--json", *args)
    assert out.exit_code == exit_code, out.stdout
    assert out.json()["error"]["code"] == code


def test_unreachable_remote_is_exit_5(remote: Remote, tmp_path: Path) -> None:
    a = remote.clone("a")
    git(a, "remote", "set-url", "origin", str(tmp_path / "gone.git"))
    out = run_michi(a, "--json", "lock", "run", "--remote", "--", "true")
    assert out.exit_code == 5 and out.json()["error"]["code"] == "remote_unreachable"


def test_stats_count_remote_holds_apart_from_local_ones(remote: Remote) -> None:
    a = remote.clone("a")
    for _ in range(2):
        assert run_michi(a, "lock", "run", "--remote", "--", "true").exit_code == 0
    assert run_michi(a, "lock", "run", "--", "true").exit_code == 0
    stats = run_michi(a, "--json", "lock", "stats").json()
    assert stats["acquisitions"] == 1
    assert stats["remote"]["acquisitions"] == 2 and stats["remote"]["hold"]["median"] is not None
    assert "remote lock (--remote)" in run_michi(a, "lock", "stats").stdout


def test_the_lock_commands_stay_lean(remote: Remote) -> None:
    a = remote.clone("a")
    probe = "import sys; from michi.cli.main import main; main(['lock','status','--remote']); "
    probe += "print('git' in sys.modules)"
    proc = subprocess.run(
        [sys.executable, "-c", probe], cwd=a, capture_output=True, text=True, env=os.environ
    )
    assert proc.stdout.strip().endswith("False"), proc.stdout + proc.stderr


def test_the_holder_renews_so_a_command_may_outlast_the_ttl(remote: Remote) -> None:
    a, b = remote.clone("a"), remote.clone("b")
    marker = a / ".git" / "started"
    script = f"touch {marker}; sleep 5"
    holder = subprocess.Popen(
        [sys.executable, "-m", "michi", "lock", "run", "--remote", "--ttl", "3", "--", "sh", "-c", script],
        cwd=a,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    while not marker.exists():
        assert holder.poll() is None, holder.communicate()
        time.sleep(0.05)
    commits = {git(remote.bare, "rev-parse", REF)}
    lock = remote_lock(b)
    while holder.poll() is None:
        view = lock.read()
        if view.held:
            assert not view.expired, view  # renewed before this machine saw it unchanged for 3 s
            commits.add(str(view.oid))
        time.sleep(0.1)
    _out, err = holder.communicate()
    assert holder.returncode == 0, err
    assert len(commits) >= 3  # acquired, then renewed every TTL/3 while `sleep 5` ran


def test_a_push_that_landed_unnoticed_is_adopted_not_mistaken_for_a_takeover(remote: Remote) -> None:
    a = remote.clone("a")
    lock = remote_lock(a)
    lock.acquire(0)
    stale = lock.oid
    lock.renew()
    lock.oid = stale  # as if the renewal's push had timed out on our side but landed on the remote
    lock.renew()  # the swap on `stale` fails; the re-read finds our token: adopt and renew again
    record = record_on(remote.bare)
    assert record["state"] == "held" and record["token"] == lock.record.token  # type: ignore[union-attr]
    lock.oid = stale
    lock.release()
    assert record_on(remote.bare)["state"] == "free"


def test_renewing_a_lock_taken_over_is_lock_lost(remote: Remote) -> None:
    a, b = remote.clone("a"), remote.clone("b")
    lock = remote_lock(a)
    lock.acquire(0)
    forced = run_michi(b, "--json", "lock", "release", "--remote", "--force", "--yes")
    assert forced.exit_code == 0, forced.stdout
    assert run_michi(b, "lock", "acquire", "--remote").exit_code == 0
    with pytest.raises(LockLost):
        lock.renew()
    with pytest.raises(LockLost):
        lock.release()
    assert record_on(remote.bare)["fence"] == 2 and record_on(remote.bare)["state"] == "held"


def test_file_urls_work_too(remote: Remote) -> None:
    a = remote.clone("a")
    git(a, "remote", "set-url", "origin", remote.bare.as_uri())
    out = run_michi(a, "lock", "run", "--remote", "--", "sh", "-c", 'echo "$MICHI_LOCK_FENCE"')
    assert out.exit_code == 0 and out.stdout.strip() == "1", out.stderr


def test_a_remote_with_two_push_urls_is_refused_before_any_push(remote: Remote, tmp_path: Path) -> None:
    """git pushes a record to each push URL in turn: one lagging or refusing, "exactly one wins" held on
    neither (ADR 0009). Refused as a transaction's push is (ADR 0004), nothing pushed anywhere."""
    a = remote.clone("a")
    mirror = tmp_path / "mirror.git"
    git(tmp_path, "init", "-q", "--bare", str(mirror))
    git(a, "remote", "set-url", "--add", "--push", "origin", str(remote.bare))
    git(a, "remote", "set-url", "--add", "--push", "origin", str(mirror))
    out: CliResult = run_michi(a, "--json", "lock", "run", "--remote", "--", "true")
    assert out.exit_code == 2, out.stdout
    error = out.json()["error"]
    assert error["code"] == "bad_config" and str(mirror) in error["message"], error
    for bare in (remote.bare, mirror):
        assert git(bare, "for-each-ref", REF) == ""
    git(a, "remote", "set-url", "--delete", "--push", "origin", str(mirror))
    assert run_michi(a, "lock", "run", "--remote", "--", "true").exit_code == 0


def test_remote_lock_run_of_a_non_executable_on_path_exits_126(remote: Remote, tmp_path: Path) -> None:
    """`lock run --remote` says what `lock run` says: a file found on PATH without the exec bit is 126, as
    a shell's; only a command found nowhere is 127. It said 127, "command not found"."""
    clone = remote.clone("a")
    folder = tmp_path / "bin"
    folder.mkdir()
    (folder / "not-executable").write_text("#!/bin/sh\nexit 0\n")
    env = {"PATH": f"{folder}{os.pathsep}{os.environ['PATH']}"}
    out = run_michi(clone, "--json", "lock", "run", "--remote", "--", "not-executable", env=env)
    assert out.exit_code == 126, out.stdout
    assert "Permission denied" in out.json()["error"]["message"]
    out = run_michi(clone, "--json", "lock", "run", "--remote", "--", "not-anywhere", env=env)
    assert out.exit_code == 127, out.stdout
    assert record_on(remote.bare)["state"] == "free"
