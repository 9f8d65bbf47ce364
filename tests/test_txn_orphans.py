"""Exactly once when a SIGKILLed michi leaves its `git push` running (ADR 0004).

`git push` runs in its own session, so it outlives the michi that started it. The next command must not
apply the operation a second time when that orphaned push lands: it waits for the orphan (the journal
names it), and it recognises a landed operation by its `Michi-Txn` trailer whatever commit carries it.
Each test drives real michi processes against a bare remote whose pre-receive hook holds or refuses
pushes on the test's signal (`txnkit.gated_hook`).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import psutil
import pytest
from conftest import Remote, git, spawn_michi
from txnkit import assert_exactly_once, detached_server, gated_hook, michi_commits

from michi.git import plain
from michi.workflow import orphans
from michi.workflow.journal import PushProcess

DEADLINE = 60.0


def finish(proc: subprocess.Popen[str]) -> tuple[int, str]:
    out, err = proc.communicate(timeout=DEADLINE)
    return proc.returncode, out + err


def await_(condition: Callable[[], bool], what: str, proc: subprocess.Popen[str] | None = None) -> None:
    deadline = time.monotonic() + DEADLINE
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        assert proc is None or proc.poll() is None, f"{what}: the process ended ({proc.returncode})"
        time.sleep(0.01)


def kill_in_hook(proc: subprocess.Popen[str], signals: Path, n: int) -> None:
    """SIGKILL michi while the remote's hook holds its push number `n`."""
    await_(lambda: (signals / f"reached.{n}").exists(), f"push {n} in the hook", proc)
    proc.send_signal(signal.SIGKILL)
    proc.wait()


def holds_lock(repo: Path, proc: subprocess.Popen[str]) -> bool:
    try:
        return bool(json.loads((repo / ".michi.lock" / "owner.json").read_text())["pid"] == proc.pid)
    except (OSError, ValueError):
        return False


def tasks_on(bare: Path) -> dict[str, dict[str, object]]:
    files = git(bare, "ls-tree", "-r", "--name-only", "main", ".tasks/").split()
    tasks = [json.loads(git(bare, "show", f"main:{f}")) for f in files if f.endswith(".json")]
    return {str(t["description"]): t for t in tasks}


@pytest.fixture(autouse=True)
def gates_open_at_the_end(remote: Remote) -> Iterator[None]:
    """A failed test must not leave a push held in the hook: open every gate when it ends."""
    yield
    if (remote.root / "signals").is_dir():
        (remote.root / "signals" / "open").touch()


@pytest.fixture
def ready(cli: Callable[..., object], remote: Remote, repo: Path) -> Path:
    assert cli(repo, "init").exit_code == 0  # type: ignore[attr-defined]
    return repo


def test_takeover_waits_for_the_orphaned_pushes_then_finishes_each_once(remote: Remote, ready: Path) -> None:
    signals = remote.root / "signals"
    gated_hook(remote.bare, signals)
    x = spawn_michi(ready, "task", "add", "task X")
    kill_in_hook(x, signals, 1)  # X's push is orphaned, held by the remote
    y = spawn_michi(ready, "--json", "task", "add", "task Y")
    await_(lambda: holds_lock(ready, y), "Y to take over the lock", y)
    (signals / "gate.1").touch()  # only now may X's orphaned push land: Y is already waiting for it
    kill_in_hook(y, signals, 2)  # and Y is killed in its own push: two orphans in a row
    sync = spawn_michi(ready, "--json", "sync")
    await_(lambda: holds_lock(ready, sync), "sync to take over the lock", sync)
    (signals / "gate.2").touch()
    code, out = finish(sync)
    assert code == 0, out
    report = json.loads(out.splitlines()[0])
    assert report["recovered"] == 1 and report["refused"] == [] and report["renumbered"] == []
    tasks = tasks_on(remote.bare)
    assert {d: (t["michi_id"], t["michi_version"]) for d, t in tasks.items()} == {
        "task X": (1, 1),
        "task Y": (2, 1),
    }
    assert [m.splitlines()[0] for _o, m in michi_commits(remote.bare)][:2] == [
        "michi: task add 2",
        "michi: task add 1",
    ]
    assert_exactly_once(remote.bare)
    assert git(ready, "rev-parse", "HEAD") == remote.head()
    assert git(ready, "status", "--porcelain") == ""


def test_a_michi_killed_before_its_journal_names_the_push_leaves_no_push(remote: Remote, ready: Path) -> None:
    """Killed after its `git push` process exists but before the journal names it: nothing would make the
    next holder wait for such a push, whose update of the remote-tracking ref then raced that holder's
    fetch ("cannot lock ref", exit 5), and which could land after the holder decided it had not. The push
    waits at a gate until the journal names it, so it never runs at all, and the next holder finishes
    the operation the journal holds, in its own one push."""
    signals = remote.root / "signals"
    gated_hook(remote.bare, signals)
    code, out = finish(spawn_michi(ready, "task", "add", "task X", env={"MICHI_FAULT": "spawned"}))
    assert code == -signal.SIGKILL, out
    y = spawn_michi(ready, "--json", "task", "add", "task Y")
    await_(lambda: (signals / "reached.1").exists(), "a push in the hook", y)
    (signals / "open").touch()
    code, out = finish(y)
    assert code == 0, out
    assert sorted(p.name for p in signals.glob("reached.*")) == ["reached.1"]  # only Y's push ever ran
    assert sorted(tasks_on(remote.bare)) == ["task X", "task Y"]  # X's journaled operation, finished by Y
    assert_exactly_once(remote.bare)
    assert git(ready, "status", "--porcelain") == ""


_PAUSED_AT = r"""
import os, signal, sys
from michi import faults
real = faults.point
def pause_there(name):
    if name == os.environ["PAUSE_AT"]:
        os.kill(os.getpid(), signal.SIGSTOP)
    real(name)
faults.point = pause_there
from michi.cli.main import main
sys.exit(main(sys.argv[1:]))
"""


@pytest.mark.parametrize("where", ["committed", "pushing"])
def test_a_holder_paused_past_its_lease_leaves_its_operation_to_the_next_once(
    remote: Remote, ready: Path, where: str
) -> None:
    """A holder paused (SIGSTOP) after the journal named its push, before it let git start, until its
    lease ran out: the next command stops the unopened gate at once, and lands the paused operation with
    its own. The paused one, woken, touches nothing and says not to run it again (it would land twice)."""
    env = {**os.environ, "MICHI_LOCK_TTL": "1", "PAUSE_AT": where}
    paused = subprocess.Popen(
        [sys.executable, "-c", _PAUSED_AT, "--json", "task", "add", "task X"],
        cwd=ready,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        await_(lambda: psutil.Process(paused.pid).status() == psutil.STATUS_STOPPED, "the pause", paused)
        code, out = finish(spawn_michi(ready, "--json", "task", "add", "task Y"))
        assert code == 0, out
        assert "had not started" in out, out
    finally:
        paused.send_signal(signal.SIGCONT)
    code, out = finish(paused)
    assert code == 5, out
    error = json.loads(out.splitlines()[0])["error"]
    assert error["code"] == "push_unknown" and "do not run this command again" in error["hint"], error
    assert sorted(tasks_on(remote.bare)) == ["task X", "task Y"]
    assert_exactly_once(remote.bare)
    assert not (ready / ".git/michi/journal.json").exists()
    assert git(ready, "rev-parse", "HEAD") == remote.head()


@pytest.mark.parametrize("op", ["add", "annotate"])
def test_orphan_landing_after_a_refused_takeover_is_recognised_by_its_txn(
    cli: Callable[..., object], remote: Remote, ready: Path, op: str
) -> None:
    """The orphan is out of reach (its remote half runs on the server), so the takeover cannot wait for
    it: it rebuilds the operation as another commit, its own push is refused, the orphan lands later.
    The journal then names a commit that never landed; only the txn id tells the truth."""
    if op == "annotate":
        assert cli(ready, "task", "add", "task X").exit_code == 0  # type: ignore[attr-defined]
    detached_server(ready, remote.root)
    signals = remote.root / "signals"
    gated_hook(remote.bare, signals)
    (signals / "refuse.2").touch()  # the takeover's push, carrying the orphan's operation rebuilt
    (signals / "refuse.3").touch()  # and its own operation, pushed alone after that refusal
    before = remote.head()
    first = spawn_michi(
        ready, *(["task", "annotate", "1", "note N"] if op == "annotate" else ["task", "add", "task X"])
    )
    kill_in_hook(first, signals, 1)
    code, out = finish(spawn_michi(ready, "task", "add", "task Y", env={"MICHI_ORPHAN_WAIT": "0"}))
    assert code == 5 and "flaky remote says no" in out, out  # refused: Y did not happen
    (signals / "gate.1").touch()
    await_(lambda: remote.head() != before, "the orphaned push to land")
    code, out = finish(spawn_michi(ready, "--json", "sync"))
    assert code == 0, out
    report = json.loads(out.splitlines()[0])
    assert report["recovered"] == 1 and "already landed" in report["message"], report
    task = tasks_on(remote.bare)["task X"]
    assert task["michi_id"] == 1 and "task Y" not in tasks_on(remote.bare)
    if op == "annotate":
        assert [a["description"] for a in task["annotations"]] == ["note N"]  # type: ignore[union-attr]
        assert task["michi_version"] == 2
    assert_exactly_once(remote.bare)


def test_orphan_landing_late_keeps_another_clones_later_work(remote: Remote, ready: Path) -> None:
    """Another clone finishes the task the orphan added before this clone syncs: the sync must neither
    add it again nor overwrite the other clone's `done` and note."""
    detached_server(ready, remote.root)
    signals = remote.root / "signals"
    gated_hook(remote.bare, signals)
    before = remote.head()
    x = spawn_michi(ready, "task", "add", "task X")
    kill_in_hook(x, signals, 1)
    y = spawn_michi(ready, "task", "add", "task Y", env={"MICHI_ORPHAN_WAIT": "0"})
    kill_in_hook(y, signals, 2)  # Y rebuilt X on the old tip; both pushes are orphans now
    (signals / "gate.1").touch()
    await_(lambda: remote.head() != before, "X's orphaned push to land")
    (signals / "gate.2").touch()  # Y's push was built on the old tip: the remote refuses to move back
    (signals / "open").touch()
    other = remote.clone("other")
    for args in (["task", "done", "1"], ["task", "annotate", "1", "bob finished this"]):
        code, out = finish(spawn_michi(other, "--agent", "bob", *args))
        assert code == 0, out
    code, out = finish(spawn_michi(ready, "--json", "sync"))
    assert code == 0, out
    tasks = tasks_on(remote.bare)
    x_task, y_task = tasks["task X"], tasks["task Y"]
    assert (x_task["michi_id"], x_task["michi_state"], x_task["michi_version"]) == (1, "done", 3)
    assert [a["description"] for a in x_task["annotations"]] == ["bob finished this"]  # type: ignore[union-attr]
    assert (y_task["michi_id"], y_task["michi_version"]) == (2, 1)
    assert_exactly_once(remote.bare)


# --- the pieces -----------------------------------------------------------------------------------------


def test_settle_waits_for_a_live_push_and_stops_one_that_hangs(tmp_path: Path) -> None:
    quick = subprocess.Popen(["sleep", "0.3"], start_new_session=True)
    push = orphans.describe(quick.pid)
    assert push is not None
    note = orphans.settle(push, wait=DEADLINE)
    assert note is not None and "waited" in note
    quick.wait()
    hung = subprocess.Popen(["sh", "-c", "sleep 600 & wait"], start_new_session=True)
    push = orphans.describe(hung.pid)
    assert push is not None
    note = orphans.settle(push, wait=0.2)
    assert note is not None and "stopped" in note
    assert hung.wait(timeout=DEADLINE) == -signal.SIGTERM  # its whole process group was ended
    assert orphans.settle(push) is None  # gone: nothing to wait for


def test_settle_stops_a_push_still_held_at_its_gate_without_waiting(tmp_path: Path) -> None:
    """A holder paused (or killed) after the journal named its push but before it let git start: the
    push never ran, so the next holder stops it at once instead of waiting `MICHI_ORPHAN_WAIT` for it."""
    ran = tmp_path / "ran"
    gate = subprocess.Popen(
        ["/bin/sh", "-c", plain._GATE, plain.GATE_NAME, "touch", str(ran)],
        stdin=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        push = orphans.describe(gate.pid)
        assert push is not None
        note = orphans.settle(push, wait=3.0)  # a running push would be waited for, then stopped
        assert note is not None and "had not started" in note, note
        assert gate.wait(timeout=DEADLINE) < 0  # ended by a signal, not by "go"
        assert not ran.exists()
    finally:
        gate.kill()
        gate.wait()


def test_settle_lets_a_push_whose_gate_opened_meanwhile_run_and_waits_for_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The paused holder wakes and opens its gate just after the takeover saw the gate's arguments: the
    takeover stops the process before it decides, sees git running, and waits for it as for any push
    (it never ends a push that started and calls it unrun)."""
    ran = tmp_path / "ran"
    gate = subprocess.Popen(
        ["/bin/sh", "-c", plain._GATE, plain.GATE_NAME, "sh", "-c", f"sleep 0.3; touch {ran}"],
        stdin=subprocess.PIPE,
        start_new_session=True,
    )
    seen = orphans._gated

    def opened_right_after(push: PushProcess) -> bool:
        answer = seen(push)
        if answer and gate.stdin is not None and not gate.stdin.closed:
            gate.stdin.write(b"go\n")
            gate.stdin.close()
            await_(lambda: not seen(push), "the gate's exec")
        return answer

    monkeypatch.setattr(orphans, "_gated", opened_right_after)
    try:
        push = orphans.describe(gate.pid)
        assert push is not None
        note = orphans.settle(push, wait=DEADLINE)
        assert note is not None and "waited" in note, note
        assert gate.wait(timeout=DEADLINE) == 0 and ran.exists()
    finally:
        gate.kill()
        gate.wait()


def test_settle_never_touches_a_process_that_reused_the_pid() -> None:
    bystander = subprocess.Popen(["sleep", "600"], start_new_session=True)
    try:
        live = orphans.describe(bystander.pid)
        assert live is not None
        impostor = PushProcess(bystander.pid, live.start - 100.0, live.host, live.boot_id)
        assert orphans.settle(impostor, wait=0) is None
        assert bystander.poll() is None
    finally:
        bystander.kill()
        bystander.wait()


def test_the_common_path_never_scans_or_waits(
    cli: Callable[..., object], ready: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Recognising landed work costs a git process: only leftover work may pay it (the lock's critical
    section stays lean)."""
    import michi.git

    def forbidden(*_a: object, **_k: object) -> None:
        raise AssertionError("scanned or waited on the common path")

    monkeypatch.setattr(michi.git, "messages_matching", forbidden)
    monkeypatch.setattr(orphans, "settle", forbidden)
    for args in (["task", "add", "x"], ["task", "annotate", "1", "n"], ["sync"]):
        result = cli(ready, *args, "--json")
        assert result.exit_code == 0, result.stdout  # type: ignore[attr-defined]


def test_a_journal_from_before_bases_and_ids_still_recovers(remote: Remote, ready: Path) -> None:
    """Entries written by an older michi have no `base`, `ids` or push record: the scan then covers the
    whole history, and the operation still lands once."""
    killed = subprocess.run(
        [sys.executable, "-m", "michi", "task", "add", "old"],
        cwd=ready,
        env={**os.environ, "MICHI_FAULT": "pushed"},
        capture_output=True,
    )
    assert killed.returncode == -signal.SIGKILL
    journal = ready / ".git/michi/journal.json"
    body = json.loads(journal.read_text())
    body.pop("push", None)
    for entry in body["entries"]:
        entry.pop("base"), entry.pop("ids")
    journal.write_text(json.dumps(body))
    code, out = finish(spawn_michi(ready, "--json", "sync"))
    assert code == 0 and "already landed" in json.loads(out.splitlines()[0])["message"], out
    assert list(tasks_on(remote.bare)) == ["old"]
    assert_exactly_once(remote.bare)


def test_a_taker_refused_on_the_paused_holders_claim_still_lands_that_claim(
    remote: Remote, ready: Path
) -> None:
    """A holder paused past its lease with its claim journaled: the command that takes over applies that
    claim first and is refused on it ("claimed by A"). The claim it was refused on must land (it did not:
    the refusal dropped the whole application, and a third agent was then given the task)."""
    assert spawn_michi(ready, "task", "add", "the task").wait(timeout=DEADLINE) == 0
    env = {"MICHI_LOCK_TTL": "1", "MICHI_FAULT": "committed:SIGSTOP"}
    paused = spawn_michi(ready, "--json", "--agent", "A", "task", "claim", "1", env=env)
    try:
        await_(lambda: psutil.Process(paused.pid).status() == psutil.STATUS_STOPPED, "the pause", paused)
        code, out = finish(spawn_michi(ready, "--json", "--agent", "B", "task", "claim", "1"))
        assert code == 4 and "claimed" in out, out
    finally:
        paused.send_signal(signal.SIGCONT)
    finish(paused)
    assert tasks_on(remote.bare)["the task"]["michi_assignee"] == "A"
    assert_exactly_once(remote.bare)
