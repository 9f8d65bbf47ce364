"""The git transaction against real git: bare origins, several clones, real processes and SIGKILL."""

from __future__ import annotations

import json
import os
import shutil
import signal
import time
from pathlib import Path

import pytest
from conftest import Remote, git, run_michi
from gitdaemon import git_daemon
from txnkit import LOG, drive, start

from michi.git.plain import YIELDING_NICE


def names_on(where: Path, ref: str = "main") -> list[str]:
    out = git(where, "show", f"{ref}:.tasks/log.json", check=False)
    return json.loads(out) if out else []


def subjects(where: Path, ref: str = "main") -> list[str]:
    return git(where, "log", "--format=%s", ref).splitlines()


def test_transaction_commits_pushes_and_updates_the_clone(remote: Remote, repo: Path) -> None:
    proc = drive(repo, "a")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = json.loads(proc.stdout)
    assert out["pushed"] and out["result"] == {"name": "a", "count": 1}
    assert names_on(remote.bare) == ["a"]
    message = git(remote.bare, "log", "-1", "--format=%B", "main")
    assert message.startswith("michi: append a\n")
    assert "Michi-Txn: " in message and "Michi-Agent: driver" in message and "Michi-Item: a" in message
    assert git(repo, "rev-parse", "HEAD") == remote.head()
    assert json.loads((repo / ".tasks/log.json").read_text()) == ["a"]
    assert git(repo, "status", "--porcelain") == ""
    assert not (repo / ".michi.lock").exists()  # released after the push
    assert ".michi.lock" in (repo / ".git/info/exclude").read_text()  # and never shown by git status


def test_user_work_and_unpushed_commits_survive_byte_for_byte(remote: Remote, repo: Path) -> None:
    (repo / "staged.txt").write_text("staged\n")
    git(repo, "add", "staged.txt")
    (repo / "README.md").write_text("hello\nunstaged edit\n")
    (repo / "untracked.bin").write_bytes(b"\x00\x01raw")
    (repo / "mine1.txt").write_text("1\n")
    git(repo, "add", "mine1.txt")
    git(repo, "commit", "-q", "-m", "my first", "--", "mine1.txt")
    (repo / "mine2.txt").write_text("2\n")
    git(repo, "add", "mine2.txt")
    git(repo, "commit", "-q", "-m", "my second", "--", "mine2.txt")
    before = {
        "cached": git(repo, "diff", "--cached"),
        "unstaged": git(repo, "diff"),
        "untracked": (repo / "untracked.bin").read_bytes(),
        "status": git(repo, "status", "--porcelain"),
    }
    origin_before = remote.head()

    proc = drive(repo, "a")
    assert proc.returncode == 0, proc.stdout + proc.stderr

    # Only michi's commit reached the remote, directly on top of what was there.
    assert git(remote.bare, "rev-parse", "main~1") == origin_before
    assert subjects(remote.bare)[0] == "michi: append a"
    assert git(remote.bare, "show", "--name-only", "--format=", "main") == ".tasks/log.json"
    # The user's commits are still local, now on top of michi's commit, with their content.
    assert subjects(repo, "HEAD")[:3] == ["my second", "my first", "michi: append a"]
    assert git(repo, "rev-parse", "HEAD~2") == remote.head()
    assert git(repo, "show", "HEAD:mine2.txt") == "2"
    after = {
        "cached": git(repo, "diff", "--cached"),
        "unstaged": git(repo, "diff"),
        "untracked": (repo / "untracked.bin").read_bytes(),
        "status": git(repo, "status", "--porcelain"),
    }
    assert after == before


def test_user_on_another_branch_is_left_alone(remote: Remote, repo: Path) -> None:
    git(repo, "checkout", "-q", "-b", "feature")
    head = git(repo, "rev-parse", "HEAD")
    proc = drive(repo, "a")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert any("you are on feature" in n for n in out["notes"])
    assert git(repo, "rev-parse", "HEAD") == head
    assert git(repo, "symbolic-ref", "--short", "HEAD") == "feature"
    assert names_on(repo, "main") == ["a"]  # the local task branch moved
    assert not (repo / ".tasks").exists()


def test_detached_head_still_works_and_stays_detached(remote: Remote, repo: Path) -> None:
    git(repo, "checkout", "-q", "--detach")
    head = git(repo, "rev-parse", "HEAD")
    proc = drive(repo, "a")
    assert proc.returncode == 0, proc.stderr
    assert "detached" in " ".join(json.loads(proc.stdout)["notes"])
    assert git(repo, "rev-parse", "HEAD") == head
    assert names_on(remote.bare) == ["a"]


def test_no_remote_commits_locally_and_says_so(local_repo: Path) -> None:
    proc = drive(local_repo, "a")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["pushed"] is False and any("nothing was pushed" in n for n in out["notes"])
    assert names_on(local_repo, "HEAD") == ["a"]
    assert git(local_repo, "status", "--porcelain") == ""


def test_refusal_is_decided_on_the_fresh_remote_state(remote: Remote) -> None:
    one, two = remote.clone("one"), remote.clone("two")
    assert drive(one, "x").returncode == 0
    proc = drive(two, "x", "--refuse")  # two's view is stale: it must fetch before refusing
    assert proc.returncode == 4, proc.stdout + proc.stderr
    assert json.loads(proc.stdout)["error"]["code"] == "conflict"
    assert names_on(remote.bare) == ["x"]


def test_a_refused_push_lets_the_lock_go_before_trying_again(remote: Remote) -> None:
    one, two = remote.clone("one"), remote.clone("two")
    assert drive(one, "a").returncode == 0
    assert drive(two, "b").returncode == 0  # one's last-known tip is stale now: its next push is refused
    out = json.loads(drive(one, "c").stdout)
    assert out["pushed"] and out["attempts"] == 2
    holds = out["timings"]
    assert holds["lock_hold"] > holds["lock_hold_max"] > 0  # two rounds under the lock, not one
    assert names_on(remote.bare) == ["a", "b", "c"]
    assert not (one / ".git/michi/journal.json").exists()


def test_killed_between_rounds_nothing_landed_and_the_lock_is_free(remote: Remote) -> None:
    one, two = remote.clone("one"), remote.clone("two")
    assert drive(one, "a").returncode == 0
    assert drive(two, "b").returncode == 0
    killed = drive(one, "c", env={"MICHI_FAULT": "refused"})
    assert killed.returncode == -signal.SIGKILL
    assert names_on(remote.bare) == ["a", "b"]  # the refused push landed nothing
    assert not (one / ".michi.lock").exists()  # let go before the wait, not left to go stale
    again = json.loads(drive(one, "c").stdout)
    assert again["pushed"] and again["recovered"] == 0
    assert names_on(remote.bare) == ["a", "b", "c"]


def test_the_round_after_a_refused_push_builds_on_the_tip_fetched_without_the_lock(remote: Remote) -> None:
    one, two = remote.clone("one"), remote.clone("two")
    assert drive(one, "a").returncode == 0
    assert drive(two, "b").returncode == 0
    # `fetched` is the fetch under the lock: the second round needs none, the tip came between the rounds
    proc = drive(one, "c", env={"MICHI_FAULT": "fetched"})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert json.loads(proc.stdout)["attempts"] == 2
    assert names_on(remote.bare) == ["a", "b", "c"]
    assert git(one, "rev-parse", "origin/main") == remote.head()  # the push moved the tracking ref
    assert names_on(one, "HEAD") == ["a", "b", "c"]


def test_after_a_refused_push_the_next_command_fetches_before_the_lock(remote: Remote) -> None:
    one, two = remote.clone("one"), remote.clone("two")
    assert drive(one, "a").returncode == 0
    assert drive(two, "b").returncode == 0
    assert json.loads(drive(one, "c").stdout)["attempts"] == 2  # refused once: other clones push here
    assert drive(two, "d").returncode == 0
    proc = drive(one, "e", env={"MICHI_FAULT": "fetched"})  # no fetch under the lock either
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert json.loads(proc.stdout)["attempts"] == 1  # built on the tip fetched first: not refused
    assert names_on(remote.bare) == ["a", "b", "c", "d", "e"]
    assert drive(one, "f").returncode == 0  # alone again, it still pushes at once
    assert names_on(one, "HEAD") == ["a", "b", "c", "d", "e", "f"]


def test_the_fetch_between_rounds_never_moves_the_tracking_ref(remote: Remote) -> None:
    one, two = remote.clone("one"), remote.clone("two")
    assert drive(one, "a").returncode == 0
    stale = git(one, "rev-parse", "origin/main")
    assert drive(two, "b").returncode == 0
    # killed right after the fetch without the lock: only the lock's holder may move origin/main (a
    # forced update racing its push could set it back), so the tip went to michi's own ref alone
    killed = drive(one, "c", env={"MICHI_FAULT": "prefetched"})
    assert killed.returncode == -signal.SIGKILL
    assert git(one, "rev-parse", "origin/main") == stale
    assert git(one, "rev-parse", "refs/michi/fetched/origin/main") == remote.head()
    assert names_on(remote.bare) == ["a", "b"]
    assert not (one / ".michi.lock").exists()
    again = json.loads(drive(one, "c").stdout)
    assert again["pushed"] and again["recovered"] == 0
    assert names_on(remote.bare) == ["a", "b", "c"]
    assert sum(s.startswith("michi: append c") for s in subjects(remote.bare)) == 1


def test_remote_rejecting_exits_5_and_changes_nothing(remote: Remote, repo: Path) -> None:
    hook = remote.bare / "hooks" / "pre-receive"
    hook.write_text("#!/bin/sh\necho 'protected branch' >&2\nexit 1\n")
    hook.chmod(0o755)
    before = git(repo, "for-each-ref")
    proc = drive(repo, "a")
    assert proc.returncode == 5
    assert json.loads(proc.stdout)["error"]["code"] == "remote_rejected"
    assert git(repo, "for-each-ref") == before
    assert git(repo, "status", "--porcelain") == ""
    assert not (repo / ".git/michi/journal.json").exists()


def test_remote_down_exits_5_with_a_hint(remote: Remote, repo: Path) -> None:
    git(repo, "remote", "set-url", "origin", str(remote.root / "gone.git"))
    proc = drive(repo, "a")
    assert proc.returncode == 5
    err = json.loads(proc.stdout)["error"]
    assert err["code"] == "remote_unreachable" and "--offline" in err["hint"]
    assert git(repo, "status", "--porcelain") == ""


def test_another_index_file_leaves_the_checkout_where_it_was(cli, remote: Remote, repo: Path) -> None:
    """With GIT_INDEX_FILE naming another index than the work tree's (a tool's scratch index), michi moved
    that index and the files, then the branch: the work tree's own index stayed behind, so `git status`
    showed michi's change reverted and staged, for the user's next commit to push. The branch, index and
    files stay where they were instead (the change is on the remote; a later command moves them)."""
    from conftest import run_michi

    assert cli(repo, "init").exit_code == 0
    scratch = repo.parent / "scratch-index"
    shutil.copy(repo / ".git" / "index", scratch)
    before = git(repo, "rev-parse", "main")
    added = run_michi(repo, "--json", "task", "add", "x", env={"GIT_INDEX_FILE": str(scratch)})
    assert added.exit_code == 0, added.stdout + added.stderr
    assert added.json()["transaction"]["pushed"] is True
    assert any("GIT_INDEX_FILE" in n for n in added.json()["transaction"]["notes"]), added.json()
    assert git(repo, "rev-parse", "main") == before
    assert git(repo, "status", "--porcelain") == ""
    assert cli(repo, "--json", "task", "add", "y").exit_code == 0  # without it, the checkout catches up
    assert git(repo, "rev-parse", "main") == remote.head()
    assert git(repo, "status", "--porcelain") == ""


def test_a_remote_url_naming_a_plain_file_is_unreachable_not_a_push_that_broke_off(
    remote: Remote, repo: Path
) -> None:
    """git says "invalid gitfile format" for a remote path that is a file: it never connected, so
    nothing can have landed. It was taken for a push broken off midway (`push_unknown`: "do not repeat
    the command"), with the operation left pending for the next command to finish."""
    (remote.root / "a-file").write_text("not a repository\n")
    git(repo, "remote", "set-url", "origin", str(remote.root / "a-file"))
    proc = drive(repo, "a")
    assert proc.returncode == 5, proc.stdout + proc.stderr
    assert json.loads(proc.stdout)["error"]["code"] == "remote_unreachable", proc.stdout
    assert not (repo / ".git/michi/journal.json").exists()


@pytest.mark.parametrize("spec", ["+refs/heads/*:refs/heads/*", "+refs/heads/main:refs/heads/main"])
def test_a_fetch_refspec_onto_local_branches_is_refused_before_it_overwrites_them(
    cli, remote: Remote, repo: Path, spec: str
) -> None:
    """git updates the configured destination of a branch it fetches or pushes on the side: with
    `remote.origin.fetch` mapping the task branch onto a local branch, michi's push reset the user's
    local main (their unpushed commit gone from the branch), and with main checked out michi's fetch
    failed as `remote_unreachable`. A configuration error: exit 2 naming the setting, nothing changed."""
    assert cli(repo, "init").exit_code == 0
    (repo / "mine.txt").write_text("mine\n")
    git(repo, "add", "mine.txt")
    git(repo, "commit", "-qm", "my unpushed work")
    for checked_out in (True, False):
        if not checked_out:
            git(repo, "checkout", "-q", "-b", "feature")
        git(repo, "config", "--replace-all", "remote.origin.fetch", spec)
        refs, remote_tip = git(repo, "for-each-ref"), git(remote.bare, "rev-parse", "main")
        result = cli(repo, "--json", "task", "add", "x")
        assert result.exit_code == 2, result.stdout
        error = result.json()["error"]
        assert error["code"] == "bad_config" and "remote.origin.fetch" in error["message"], error
        assert git(repo, "for-each-ref") == refs and git(remote.bare, "rev-parse", "main") == remote_tip
        assert git(repo, "log", "-1", "--format=%s", "main") == "my unpushed work"
    git(repo, "config", "--replace-all", "remote.origin.fetch", "+refs/heads/*:refs/remotes/origin/*")
    assert cli(repo, "--json", "task", "add", "x").exit_code == 0
    assert "my unpushed work" in git(repo, "log", "--format=%s", "main")


@pytest.mark.parametrize("state", ["merge", "rebase"])
def test_repo_mid_merge_or_rebase_is_refused(remote: Remote, repo: Path, state: str) -> None:
    git(repo, "checkout", "-q", "-b", "side")
    (repo / "README.md").write_text("side\n")
    git(repo, "commit", "-qam", "side")
    git(repo, "checkout", "-q", "main")
    (repo / "README.md").write_text("main\n")
    git(repo, "commit", "-qam", "main")
    if state == "merge":
        git(repo, "merge", "side", check=False)
    else:
        git(repo, "rebase", "side", check=False)
    proc = drive(repo, "a")
    assert proc.returncode == 5
    assert json.loads(proc.stdout)["error"]["code"] == "repo_in_progress"
    assert names_on(remote.bare) == []


def test_offline_work_is_pushed_by_sync_exactly_once(remote: Remote, repo: Path) -> None:
    assert drive(repo, "a", "--offline").returncode == 0
    assert drive(repo, "b", "--offline").returncode == 0
    assert names_on(remote.bare) == []
    assert names_on(repo, "HEAD") == ["a", "b"]
    other = remote.clone("other")
    assert drive(other, "c").returncode == 0  # the remote moves on meanwhile
    proc = drive(repo, "-", "--sync")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert names_on(remote.bare) == ["c", "a", "b"]
    assert git(repo, "rev-parse", "HEAD") == remote.head()
    assert not (repo / ".git/michi/journal.json").exists()


@pytest.mark.parametrize("phase", ["locked", "fetched", "spawned", "committed", "pushing", "pushed", "local"])
def test_sigkill_at_each_phase_is_recovered_exactly_once(remote: Remote, repo: Path, phase: str) -> None:
    flags = []
    if phase == "fetched":
        # make the killed run fetch under the lock: a second clone added `a`, which the killed run's view
        # lacks, so its push is refused, and the tip fetched between the rounds makes it refuse, which it
        # may only do on state fetched under the lock
        assert drive(remote.clone("other"), "a").returncode == 0
        flags = ["--refuse"]
    killed = drive(repo, "a", *flags, env={"MICHI_FAULT": phase})
    assert killed.returncode == -signal.SIGKILL, killed.stdout + killed.stderr
    assert (repo / ".michi.lock").exists()  # the dead holder's lock is still there
    proc = drive(repo, "b")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert names_on(remote.bare) == ["a", "b"]
    assert sum(s.startswith("michi: append a") for s in subjects(remote.bare)) == 1
    assert git(repo, "rev-parse", "HEAD") == remote.head()
    assert git(repo, "status", "--porcelain") == ""


@pytest.mark.parametrize("phase", ["committed", "pushed", "local"])
def test_sigkill_with_the_users_unpushed_commit_and_staged_work_keeps_them(
    remote: Remote, repo: Path, phase: str
) -> None:
    """With the user's own commit on the branch, michi's move lays it over the new tip (a replayed commit)
    and moves the index there. Killed before the branch followed ("local"), the next run found the index
    at no commit it knew: it left michi's change staged in the user's index, for good."""
    (repo / "mine.txt").write_text("my commit\n")
    git(repo, "add", "mine.txt")
    git(repo, "commit", "-qm", "the user's unpushed commit")
    (repo / "README.md").write_text("staged\n")
    git(repo, "add", "README.md")
    (repo / "mine.txt").write_text("unstaged\n")
    status, staged = git(repo, "status", "--porcelain"), git(repo, "diff", "--cached")
    killed = drive(repo, "a", env={"MICHI_FAULT": phase})
    assert killed.returncode == -signal.SIGKILL, killed.stdout + killed.stderr
    proc = drive(repo, "b")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert names_on(remote.bare) == ["a", "b"]
    assert sum(s.startswith("michi: append a") for s in subjects(remote.bare)) == 1
    assert git(repo, "status", "--porcelain") == status
    assert git(repo, "diff", "--cached") == staged
    assert (repo / "mine.txt").read_text() == "unstaged\n"
    assert git(repo, "log", "-1", "--format=%s") == "the user's unpushed commit"
    assert git(repo, "rev-parse", "HEAD~1") == remote.head()  # laid over what michi pushed


def test_a_landed_commit_the_work_tree_never_reached_is_not_taken_as_where_the_index_is(
    remote: Remote, repo: Path
) -> None:
    """A holder killed after its push landed left the index at the old commit. The next run's move from
    there is refused by the user's edit to that file; the landed commit must not then count as where the
    index already is (it is the goal): the branch would move while the index kept the old file, and a
    `git commit` would quietly undo the landed change."""
    assert drive(repo, "a").returncode == 0
    killed = drive(repo, "b", env={"MICHI_FAULT": "pushed"})
    assert killed.returncode == -signal.SIGKILL, killed.stdout + killed.stderr
    edited = b'["the user\'s own edit"]\n'
    (repo / ".tasks" / "log.json").write_bytes(edited)
    before = git(repo, "rev-parse", "HEAD")
    proc = drive(repo, "b", "--sync")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert names_on(remote.bare) == ["a", "b"]
    assert (repo / ".tasks" / "log.json").read_bytes() == edited  # the user's edit, byte for byte
    assert git(repo, "rev-parse", "HEAD") == before  # the branch stays with its index
    assert git(repo, "diff", "--cached", "--name-only", "HEAD") == ""
    assert "not updated" in json.loads(proc.stdout)["notes"][-1]


def test_sigkill_during_push_is_recovered_exactly_once(remote: Remote, repo: Path) -> None:
    gate = remote.root / "gate"
    reached = remote.root / "reached"
    hook = remote.bare / "hooks" / "pre-receive"
    hook.write_text(f"#!/bin/sh\ntouch '{reached}'\nwhile [ ! -e '{gate}' ]; do sleep 0.01; done\nexit 0\n")
    hook.chmod(0o755)
    proc = start(repo, "a")
    deadline = time.monotonic() + 60
    while not reached.exists():  # the push is in flight and the remote is holding it
        assert time.monotonic() < deadline and proc.poll() is None
        time.sleep(0.01)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    gate.touch()  # the orphaned push may now complete or die: either way exactly once
    hook.unlink()
    done = drive(repo, "b")
    assert done.returncode == 0, done.stdout + done.stderr
    assert names_on(remote.bare) == ["a", "b"]


def _race(remote: Remote, url: str, clones: int, per_clone: int) -> None:
    repos = []
    for i in range(clones):
        path = remote.root / f"racer{i}"
        git(remote.root, "clone", "-q", url, str(path))
        repos.append(path)
    procs = [start(path, f"c{i}-{j}") for i, path in enumerate(repos) for j in range(per_clone)]
    failures = []
    for p in procs:
        out, err = p.communicate(timeout=240)
        if p.returncode != 0:
            failures.append(out + err)
    assert not failures, failures[:3]
    names = names_on(remote.bare)
    assert sorted(names) == sorted(f"c{i}-{j}" for i in range(clones) for j in range(per_clone))
    assert len(subjects(remote.bare)) == clones * per_clone + 1


@pytest.mark.slow
def test_four_clones_ten_transactions_each_converge(remote: Remote) -> None:
    _race(remote, str(remote.bare), clones=4, per_clone=10)


@pytest.mark.slow
def test_four_clones_converge_over_git_daemon(remote: Remote) -> None:
    # What this adds to the test above is the transport (git://): 20 transactions started at once on four
    # clones still push to one branch side by side on a two-core machine, as the 40 above do.
    with git_daemon(remote.root) as (url, _daemon):
        _race(remote, f"{url}/origin.git", clones=4, per_clone=5)


def test_user_commits_are_pushed_only_with_push_all(remote: Remote, repo: Path) -> None:
    (repo / "mine.txt").write_text("mine\n")
    git(repo, "add", "mine.txt")
    git(repo, "commit", "-q", "-m", "my work")
    assert drive(repo, "a").returncode == 0
    assert subjects(remote.bare)[0] == "michi: append a"  # my commit stayed local
    proc = drive(repo, "b", "--push-all")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert subjects(remote.bare)[:3] == ["my work", "michi: append b", "michi: append a"]
    assert git(repo, "rev-parse", "HEAD") == remote.head()


# --- regressions found by review: each reproduced a loss or a duplicate before its fix ---------------


def test_user_commit_turning_a_folder_into_a_file_survives_replay(remote: Remote, repo: Path) -> None:
    (repo / "docs").mkdir()
    (repo / "docs" / "a").write_text("x\n")
    git(repo, "add", "docs")
    git(repo, "commit", "-qm", "docs")
    git(repo, "push", "-q", "origin", "main")
    git(repo, "rm", "-rq", "docs")
    (repo / "docs").write_text("now a file\n")
    git(repo, "add", "docs")
    git(repo, "commit", "-qm", "dir to file")
    assert drive(repo, "a").returncode == 0
    assert subjects(repo, "HEAD")[:2] == ["dir to file", "michi: append a"]
    assert git(repo, "show", "HEAD:docs") == "now a file"
    assert (repo / "docs").read_text() == "now a file\n"


def test_non_utf8_file_name_in_a_user_commit_survives_replay(remote: Remote, repo: Path) -> None:
    name = os.fsdecode(b"caf\xe9.txt")
    (repo / name).write_text("d\n")
    git(repo, "add", "--", name)
    git(repo, "commit", "-qm", "latin1 name")
    proc = drive(repo, "a")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert subjects(repo, "HEAD")[:2] == ["latin1 name", "michi: append a"]
    assert git(repo, "status", "--porcelain") == ""


def test_push_that_landed_but_reported_failure_is_not_duplicated(remote: Remote, repo: Path) -> None:
    wrapper = remote.root / "receive-pack-then-fail.sh"
    wrapper.write_text('#!/bin/sh\ngit-receive-pack "$@"\nexit 1\n')
    wrapper.chmod(0o755)
    git(repo, "config", "remote.origin.receivepack", str(wrapper))
    proc = drive(repo, "a")
    assert proc.returncode == 0, proc.stdout + proc.stderr  # michi asked the remote: it landed
    git(repo, "config", "--unset", "remote.origin.receivepack")
    assert drive(repo, "b").returncode == 0
    assert names_on(remote.bare) == ["a", "b"]


def test_ctrl_c_during_the_push_finishes_the_operation(remote: Remote, repo: Path) -> None:
    gate, reached = remote.root / "gate", remote.root / "reached"
    hook = remote.bare / "hooks" / "pre-receive"
    hook.write_text(f"#!/bin/sh\ntouch '{reached}'\nwhile [ ! -e '{gate}' ]; do sleep 0.01; done\n")
    hook.chmod(0o755)
    proc = start(repo, "a")
    deadline = time.monotonic() + 60
    while not reached.exists():
        assert time.monotonic() < deadline and proc.poll() is None
        time.sleep(0.01)
    proc.send_signal(signal.SIGINT)
    gate.touch()
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, out + err  # it landed: the command reports success, not a half-known 130
    assert json.loads(out)["pushed"] is True
    assert names_on(remote.bare) == ["a"]
    assert git(repo, "rev-parse", "HEAD") == remote.head()
    assert not (repo / ".git/michi/journal.json").exists()


@pytest.mark.parametrize("sig", ["SIGINT", "SIGTERM", "SIGHUP"])
def test_a_signal_just_after_the_change_landed_is_not_taken_for_a_failure(
    remote: Remote, repo: Path, sig: str
) -> None:
    """A Ctrl-C (or SIGTERM, a closing terminal) between the push's end and the command's answer came too
    late to stop anything: the command finishes and says so. It said "interrupted, run the command again"
    (exit 130) for a task that had landed, or died of SIGTERM without a word: run again, a second task."""
    assert run_michi(repo, "init").exit_code == 0
    landed = run_michi(repo, "--json", "task", "add", "late", env={"MICHI_FAULT": f"done:{sig}"})
    assert landed.exit_code == 0, landed.stdout + landed.stderr
    assert landed.json()["id"] == 1 and landed.json()["transaction"]["pushed"] is True
    assert [t["description"] for t in run_michi(repo, "--json", "task", "list").json()] == ["late"]
    assert git(repo, "status", "--porcelain") == ""


def test_a_ctrl_c_after_one_import_chunk_landed_stops_before_the_next(
    remote: Remote, repo: Path, tmp_path: Path
) -> None:
    """Held since the first chunk landed, the Ctrl-C is acted on as the next chunk's transaction starts:
    the import stops there (130), what landed stays, and running it again imports the rest once."""
    assert run_michi(repo, "init").exit_code == 0
    records = [
        {
            "uuid": f"aaaaaaaa-1111-4111-8111-00000000000{n}",
            "description": f"t{n}",
            "status": "pending",
            "entry": "20250101T000000Z",
        }
        for n in range(3)
    ]
    (tmp_path / "tw.json").write_text(json.dumps(records))
    chunked = {"MICHI_IMPORT_CHUNK": "1"}
    stopped = run_michi(
        repo, "--json", "import", str(tmp_path / "tw.json"), env={**chunked, "MICHI_FAULT": "done:SIGINT"}
    )
    assert stopped.exit_code == 130 and stopped.json()["error"]["code"] == "interrupted"
    assert [t["description"] for t in run_michi(repo, "--json", "task", "list").json()] == ["t0"]
    assert run_michi(repo, "--json", "import", str(tmp_path / "tw.json"), env=chunked).exit_code == 0
    listed = run_michi(repo, "--json", "task", "list").json()
    assert sorted(t["description"] for t in listed) == ["t0", "t1", "t2"]


def test_offline_refuses_a_branch_checked_out_in_another_worktree(remote: Remote, repo: Path) -> None:
    git(repo, "checkout", "-qb", "feature")
    git(repo, "worktree", "add", "-q", str(remote.root / "wt"), "main")
    proc = drive(repo, "a", "--offline")
    assert proc.returncode == 5
    assert "another work tree" in json.loads(proc.stdout)["error"]["message"]
    assert git(remote.root / "wt", "status", "--porcelain") == ""


@pytest.mark.parametrize("where", ["linked", "main"])
def test_a_branch_being_rebased_in_another_worktree_is_left_alone(
    remote: Remote, repo: Path, where: str
) -> None:
    """A rebase of the task branch stopped in another work tree (HEAD detached there) ends by moving the
    branch from where it started; git refuses to move such a branch (`git branch -f`: "used by
    worktree"). michi moved it, and the user's `git rebase --continue` failed: "cannot lock ref"."""
    git(repo, "checkout", "-qb", "feature")
    git(repo, "worktree", "add", "-q", str(remote.root / "wt"), "main")
    rebasing, michi_in = (remote.root / "wt", repo) if where == "linked" else (repo, remote.root / "wt")
    if where == "main":  # the main work tree rebases main, michi runs in the linked one
        git(rebasing, "checkout", "-q", "--detach")
        git(michi_in, "checkout", "-q", "-b", "other")
        git(rebasing, "checkout", "-q", "main")
    (rebasing / "mine.txt").write_text("my work\n")
    git(rebasing, "add", "mine.txt")
    git(rebasing, "commit", "-qm", "my work")
    git(rebasing, "rebase", "-q", "-i", "HEAD~1", env={"GIT_SEQUENCE_EDITOR": "sed -i 1s/^pick/edit/"})
    before = git(repo, "rev-parse", "main")
    proc = drive(michi_in, "a")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert names_on(remote.bare) == ["a"]
    assert "being rebased in another work tree" in " ".join(json.loads(proc.stdout)["notes"])
    offline = drive(michi_in, "b", "--offline")  # would commit to main itself: refused
    assert offline.returncode == 5, offline.stdout + offline.stderr
    assert "being rebased in another work tree" in json.loads(offline.stdout)["error"]["message"]
    assert git(repo, "rev-parse", "main") == before
    git(rebasing, "rebase", "--continue")
    assert git(rebasing, "log", "-1", "--format=%s", "main") == "my work"


def test_sigkill_between_index_and_branch_update_without_remote(local_repo: Path) -> None:
    killed = drive(local_repo, "a", env={"MICHI_FAULT": "local"})
    assert killed.returncode == -signal.SIGKILL
    proc = drive(local_repo, "b")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert names_on(local_repo, "HEAD") == ["a", "b"]
    assert git(local_repo, "status", "--porcelain") == ""


def test_a_fetch_no_lock_waits_for_yields_the_cpu_and_the_push_does_not(remote: Remote) -> None:
    """On cores shared by several clones, the fetch a command makes before it takes the lock runs at a low
    CPU priority, its session's scheduling group too where Linux has one (ADR 0004); the holder's push
    and fetch keep the usual one."""
    one, two = remote.clone("one"), remote.clone("two")
    assert drive(one, "a").returncode == 0
    assert drive(two, "b").returncode == 0
    usual = os.getpriority(os.PRIO_PROCESS, 0)  # what michi and its git start with here
    if usual >= YIELDING_NICE:
        pytest.skip(f"the tests run at nice {usual} already")
    seen = remote.root / "seen"
    for side in ("upload", "receive"):
        # The remote's side of each fetch and push notes what it ran at once it served. The command sets
        # its session's priority as soon as it started it, long before a fetch is served; a change of
        # the group's that the kernel put off for its 100 ms interval comes after it: awaited (bounded).
        script = remote.root / f"{side}.sh"
        script.write_text(
            f'#!/bin/sh\ngit {side}-pack "$@"\nstatus=$?\n'
            "nice=$(awk '{print $19}' /proc/$$/stat)\n"
            'group() { g=$(cat /proc/$$/autogroup 2>/dev/null); echo "${g##* }"; }\n'
            f'n=0; while [ "$nice" = {YIELDING_NICE} ] && [ -n "$(group)" ]'
            f' && [ "$(group)" != {YIELDING_NICE} ] && [ $n -lt 1000 ]; do sleep 0.01; n=$((n+1)); done\n'
            f'echo "{side} $nice $(group)" >> "{seen}"\n'
            "exit $status\n"
        )
        script.chmod(0o755)
        git(one, "config", f"remote.origin.{side}pack", str(script))
    proc = drive(one, "c")  # refused once (two pushed b): the tip is fetched between rounds, unlocked
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert json.loads(proc.stdout)["attempts"] == 2
    assert names_on(remote.bare) == ["a", "b", "c"]
    lines = [line.split(" ") for line in seen.read_text().splitlines()]
    # The pushes (the refused one, the turn's, the landing one) and the fetch under the lock: as usual.
    # The fetch between the rounds, without the lock: a low priority.
    held = [line for line in lines if line[0] == "receive" or line[1] == str(usual)]
    unlocked = [line for line in lines if line not in held]
    assert len([line for line in held if line[0] == "receive"]) >= 2, lines
    assert all(line[1] == str(usual) for line in held) and len(unlocked) == 1, lines
    assert unlocked[0][:2] == ["upload", str(YIELDING_NICE)], lines
    if Path("/proc/self/autogroup").exists():  # the group's weight too, not only the processes'
        assert unlocked[0][2] == str(YIELDING_NICE) and all(line[2] == "0" for line in held), lines


def test_push_all_never_sets_the_remote_back(remote: Remote, repo: Path) -> None:
    """`--push-all` pushes the local branch leased on what just landed: a branch left where it was (the user
    has changes in the task file michi changed) does not hold it, and a push leased on it would be a forced
    update dropping the commit that landed: it is not pushed."""
    assert drive(repo, "a").returncode == 0
    (repo / LOG).write_text("mine\n")  # unstaged: the local update after the next push is refused

    proc = drive(repo, "b", "--push-all")

    assert proc.returncode == 0, proc.stderr
    log = git(remote.bare, "log", "--format=%s", "main")
    assert "michi: append b" in log.splitlines()[0], log
