"""A push lands on one repository, or michi asks that repository before it says what happened (ADR 0004).

git pushes to every push URL of a remote in turn, and michi fetches from the first URL: with a mirror as
a second push URL, origin took michi's commit while the mirror refused it or, lagging, answered "stale
info", and michi said "nothing landed" (or applied the operation again and again). Such a remote is
refused before the lock; a push that still went to several URLs, or whose remote spoke before it broke
off, is checked against the remote michi fetches from. And a group-commit holder whose batched push the
remote refused says truthfully what became of the operations it set aside (ADR 0017)."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import Remote, git, run_michi, spawn_michi
from txnkit import assert_exactly_once, michi_commits, txn_of

# A mirror that refuses every push, as a read-only or broken mirror does.
REFUSING = "#!/bin/sh\necho 'mirror is read-only today' >&2\nexit 1\n"


def _michi_ready(remote: Remote, repo: Path) -> None:
    assert run_michi(repo, "init").exit_code == 0
    assert run_michi(repo, "task", "add", "base").exit_code == 0


def _mirror(remote: Remote, how: str) -> Path:
    """A bare copy of origin, refusing pushes (`refusing`) or one commit behind it (`lagging`)."""
    mirror = remote.root / "mirror.git"
    git(remote.root, "clone", "-q", "--bare", "--no-local", str(remote.bare), str(mirror))
    if how == "refusing":
        hook = mirror / "hooks" / "pre-receive"
        hook.write_text(REFUSING)
        hook.chmod(0o755)
    else:
        git(mirror, "update-ref", "refs/heads/main", git(mirror, "rev-parse", "main~1"))
    return mirror


def _descriptions(bare: Path) -> list[str]:
    return [m.splitlines()[0] for _oid, m in michi_commits(bare)]


@pytest.mark.parametrize("how", ["refusing", "lagging"])
@pytest.mark.parametrize("key", ["pushurl", "url"])
def test_a_remote_with_two_push_urls_is_refused_before_the_lock(
    remote: Remote, repo: Path, how: str, key: str
) -> None:
    """Old: a refusing mirror made exit 5 `remote_rejected` ("did not happen") of a task origin had; a
    lagging one made `push_retries_exhausted` after landing the same note 17 times. Either way an
    agent's retry did it again. `url` set twice (no pushurl) pushes to both the same way."""
    _michi_ready(remote, repo)
    mirror = _mirror(remote, how)
    before = remote.head()
    if key == "pushurl":
        git(repo, "config", "--add", "remote.origin.pushurl", str(remote.bare))
    git(repo, "config", "--add", f"remote.origin.{key}", str(mirror))

    added = run_michi(repo, "--json", "task", "annotate", "1", "NOTE")
    assert added.exit_code == 2, added
    error = added.json()["error"]
    assert error["code"] == "bad_config", error
    assert error["remote"] == "origin" and error["push_urls"] == [str(remote.bare), str(mirror)], error
    assert f"remote.origin.{key}" in error["message"] and str(mirror) in error["message"], error
    assert "--delete origin" in error["hint"], error
    assert remote.head() == before  # nothing pushed, nothing journaled
    assert not (repo / ".git/michi/journal.json").exists()
    human = run_michi(repo, "task", "add", "X")
    assert human.exit_code == 2 and "2 push URLs" in human.stderr and len(human.stderr.splitlines()) <= 3
    assert remote.head() == before

    # The fix the hint names leaves one push URL: a push URL other than the fetch URL works as before.
    if key == "pushurl":
        git(repo, "remote", "set-url", "--push", "--delete", "origin", str(mirror))
        assert git(repo, "config", "--get-all", "remote.origin.pushurl") == str(remote.bare)
        git(repo, "remote", "set-url", "--push", "origin", f"file://{remote.bare}")
    else:
        git(repo, "remote", "set-url", "--delete", "origin", str(mirror))
    retried = run_michi(repo, "--json", "task", "annotate", "1", "NOTE")
    assert retried.exit_code == 0, retried
    shown = run_michi(repo, "--json", "task", "show", "1", "--fetch").json()
    assert [a["description"] for a in shown["annotations"]] == ["NOTE"] and shown["version"] == 2
    assert_exactly_once(remote.bare)


def test_an_offline_change_is_not_refused_and_sync_is(remote: Remote, repo: Path) -> None:
    """Nothing is pushed offline, so nothing can land half: only the push (`sync`) needs one URL."""
    _michi_ready(remote, repo)
    mirror = _mirror(remote, "refusing")
    git(repo, "config", "--add", "remote.origin.pushurl", str(remote.bare))
    git(repo, "config", "--add", "remote.origin.pushurl", str(mirror))
    assert run_michi(repo, "task", "add", "offline", "--offline").exit_code == 0
    synced = run_michi(repo, "--json", "sync")
    assert synced.exit_code == 2 and synced.json()["error"]["code"] == "bad_config", synced
    assert _descriptions(remote.bare).count("michi: task add 2") == 0


def stopped(pid: int) -> bool:
    stat = Path(f"/proc/{pid}/stat").read_text()
    return stat[stat.rindex(")") + 2] == "T"


def until(done: Callable[[], bool], proc: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 60
    while not done():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def finish(proc: subprocess.Popen[str]) -> tuple[int, Any]:
    out, err = proc.communicate(timeout=120)
    assert out, err
    return proc.returncode, json.loads(out)


@pytest.mark.parametrize("how", ["refusing", "lagging"])
def test_a_push_that_still_went_to_two_urls_is_checked_on_the_remote(
    remote: Remote, repo: Path, how: str
) -> None:
    """The second push URL added after michi checked (stopped before its lock, `prebuilt:SIGSTOP`): the
    push goes to both; origin takes it, the mirror does not. Old: `remote_rejected` for a change origin
    had (refusing), or the operation applied and pushed again round after round (lagging). Now a mixed
    result is a push of unknown outcome: michi asks origin, finds its commit, and answers once."""
    _michi_ready(remote, repo)
    mirror = _mirror(remote, how)
    proc = spawn_michi(
        repo, "--json", "task", "annotate", "1", "NOTE", env={"MICHI_FAULT": "prebuilt:SIGSTOP"}
    )
    try:
        until(lambda: stopped(proc.pid), proc)
        git(repo, "config", "--add", "remote.origin.pushurl", str(remote.bare))
        git(repo, "config", "--add", "remote.origin.pushurl", str(mirror))
    finally:
        proc.send_signal(signal.SIGCONT)
    code, out = finish(proc)
    assert code == 0 and out["transaction"]["pushed"], out
    notes = [txn_of(m) for _oid, m in michi_commits(remote.bare) if m.startswith("michi: task annotate")]
    assert len(notes) == 1, notes
    assert_exactly_once(remote.bare)
    assert not (repo / ".git/michi/journal.json").exists()


def test_a_push_whose_remote_spoke_before_it_broke_off_is_checked_on_the_remote(
    remote: Remote, repo: Path
) -> None:
    """The remote moved the branch, its hook printed "Permission denied" (a marker of a remote never
    reached) and its side died. Old: exit 5 `remote_unreachable` ("did not happen, run it again") for a
    task origin had. `remote:` lines prove git talked to the remote: michi asks it, and it has the task."""
    _michi_ready(remote, repo)
    hook = remote.bare / "hooks" / "post-receive"
    hook.write_text("#!/bin/sh\necho 'Permission denied: cannot notify CI' >&2\nkill -9 $PPID\n")
    hook.chmod(0o755)
    before = len(michi_commits(remote.bare))
    added = run_michi(repo, "--json", "task", "add", "X")
    assert added.exit_code == 0, added
    assert added.json()["transaction"]["pushed"], added
    assert len(michi_commits(remote.bare)) == before + 1
    assert_exactly_once(remote.bare)
