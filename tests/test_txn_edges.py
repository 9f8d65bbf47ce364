"""The edges of one transaction (ADR 0004): a remote whose task branch is gone or was set back, a Ctrl-C
or SIGTERM at the moments between michi's journal, the user's index and the branch, and a michi killed in
one work tree whose next command runs in another. Real git, real processes, real signals."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.conftest import Remote, git, run_michi


def _ready(remote: Remote, name: str = "work") -> Path:
    work = remote.clone(name)
    assert run_michi(work, "init").exit_code == 0
    return work


def _descriptions(bare: Path) -> list[str]:
    """Every task's description on the remote's main, in file order."""
    names = git(bare, "ls-tree", "-r", "--name-only", "main").splitlines()
    found = []
    for name in names:
        if name.endswith(".json") and "/.tasks/" in f"/{name}":
            found.append(json.loads(git(bare, "show", f"main:{name}"))["description"])
    return sorted(found)


def _journal(work: Path) -> list[str]:
    path = work / ".git" / "michi" / "journal.json"
    if not path.exists():
        return []
    return [e["command"] for e in json.loads(path.read_text()).get("entries", [])]


# -- a remote without the task branch, or set back -------------------------------------------------------


def test_a_deleted_remote_branch_is_never_started_anew_over_the_local_history(remote: Remote) -> None:
    work = _ready(remote)
    assert run_michi(work, "task", "add", "one").exit_code == 0
    git(remote.bare, "update-ref", "-d", "refs/heads/main")  # deleted by mistake on the remote
    git(work, "fetch", "-q", "--prune")

    res = run_michi(work, "--json", "task", "add", "two")

    assert res.exit_code == 5, res.stdout + res.stderr
    error = json.loads(res.stdout)["error"]
    assert error["code"] == "remote_branch_missing"
    assert "git push -u origin main" in error["hint"]
    assert git(remote.bare, "branch", "--list") == ""  # nothing pushed: no parentless main
    assert git(work, "log", "-1", "--format=%s", "main").startswith("michi: task add 1")


def test_a_stale_tracking_ref_does_not_bring_a_deleted_branch_back(remote: Remote) -> None:
    work = _ready(remote)
    assert run_michi(work, "task", "add", "one").exit_code == 0
    git(remote.bare, "update-ref", "-d", "refs/heads/main")  # origin/main in `work` still names the old tip

    res = run_michi(work, "task", "add", "two")

    assert res.exit_code == 5, res.stderr
    assert "has no branch 'main'" in res.stderr
    assert git(remote.bare, "branch", "--list") == ""


def test_init_over_local_history_with_an_empty_remote_says_push_first(tmp_path: Path) -> None:
    bare, work = tmp_path / "origin.git", tmp_path / "work"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(bare))
    git(tmp_path, "init", "-q", "-b", "main", str(work))
    (work / "README.md").write_text("my project\n")
    git(work, "add", "README.md")
    git(work, "commit", "-q", "-m", "my project")
    git(work, "remote", "add", "origin", str(bare))

    res = run_michi(work, "init")

    assert res.exit_code == 5, res.stderr
    assert "push your branch first" in res.stderr
    assert git(bare, "branch", "--list") == ""
    git(work, "push", "-q", "-u", "origin", "main")  # as the hint says
    assert run_michi(work, "init").exit_code == 0
    assert git(bare, "log", "--format=%s", "main").splitlines()[-1] == "my project"


def test_a_remote_set_back_by_a_force_push_does_not_get_the_dropped_commit_again(remote: Remote) -> None:
    work = _ready(remote)
    for name in ("one", "two", "three"):
        assert run_michi(work, "task", "add", name).exit_code == 0
    dropped = git(remote.bare, "rev-parse", "main")
    git(remote.bare, "update-ref", "refs/heads/main", "main~1")  # an admin removes `three` on purpose
    assert git(work, "rev-parse", "origin/main") == dropped  # this clone still builds on it

    assert run_michi(work, "task", "add", "four").exit_code == 0

    assert git(remote.bare, "merge-base", "--is-ancestor", dropped, "main", check=False) == ""
    assert _descriptions(remote.bare) == ["four", "one", "two"]


# -- signals between the journal, the index and the branch -----------------------------------------------


@pytest.mark.parametrize("point", ["committed", "local", "done"])
def test_a_ctrl_c_during_an_offline_change_never_says_nothing_was_done_when_it_was(
    remote: Remote, point: str
) -> None:
    work = _ready(remote)
    (work / "notes.txt").write_text("mine\n")
    git(work, "add", "notes.txt")  # the user's staged work

    res = run_michi(work, "task", "add", "X", "--offline", env={"MICHI_FAULT": f"{point}:SIGINT"})

    assert res.exit_code == 0, res.stderr  # the change is made: the Ctrl-C is held, then dropped
    assert git(work, "diff", "--cached", "--name-only") == "notes.txt"  # no task file left staged
    assert git(work, "log", "-1", "--format=%s", "main") == "michi: task add 1"
    assert _journal(work) == ["task add X --offline"]
    assert run_michi(work, "sync").exit_code == 0
    assert _descriptions(remote.bare) == ["X"]


@pytest.mark.parametrize("sig", ["SIGINT", "SIGTERM"])
def test_a_signal_just_after_the_journal_names_the_change_leaves_nothing_to_land(
    remote: Remote, sig: str
) -> None:
    work = _ready(remote)

    res = run_michi(work, "task", "add", "X", env={"MICHI_FAULT": f"locked:{sig}"})

    assert res.exit_code == 130, res.stderr  # "nothing half-done was left; run the command again"
    assert _journal(work) == []
    assert run_michi(work, "task", "add", "X").exit_code == 0  # as the hint says
    assert run_michi(work, "sync").exit_code == 0
    assert _descriptions(remote.bare) == ["X"]


# -- another work tree ------------------------------------------------------------------------------------


def test_a_move_cut_in_the_main_work_tree_is_finished_there_after_a_command_in_a_linked_one(
    remote: Remote, tmp_path: Path
) -> None:
    work = _ready(remote)
    (work / "notes.txt").write_text("mine\n")
    git(work, "add", "notes.txt")
    linked = tmp_path / "linked"
    git(work, "worktree", "add", "-q", "-b", "feature", str(linked))

    killed = run_michi(work, "task", "add", "cut", env={"MICHI_FAULT": "local"})  # SIGKILL: index moved only
    assert killed.exit_code == -9
    assert run_michi(linked, "task", "add", "from-linked").exit_code == 0  # lands the leftover
    assert run_michi(work, "task", "add", "from-main").exit_code == 0

    assert git(work, "diff", "--cached", "--name-only") == "notes.txt"  # michi's files not left staged
    assert git(work, "rev-parse", "main") == git(remote.bare, "rev-parse", "main")
    assert _descriptions(remote.bare) == ["cut", "from-linked", "from-main"]
    assert _journal(work) == []
    assert os.path.exists(work / "notes.txt")


def test_entries_of_a_linked_work_tree_are_not_kept_for_the_main_one(remote: Remote, tmp_path: Path) -> None:
    """Only a move cut in the work tree that has the branch checked out is kept for it: one cut in a linked
    tree (its index never held the branch) is done with once it landed, or every later command there
    fetched and looked for it again, for ever."""
    work = _ready(remote)
    linked = tmp_path / "linked"
    git(work, "worktree", "add", "-q", "-b", "feature", str(linked))
    assert run_michi(linked, "task", "add", "cut", env={"MICHI_FAULT": "pushed"}).exit_code == -9

    assert run_michi(linked, "task", "add", "next").exit_code == 0

    assert _journal(work) == []
    assert _descriptions(remote.bare) == ["cut", "next"]


def test_an_operation_set_aside_beside_a_kept_one_stays_pending_once(remote: Remote, tmp_path: Path) -> None:
    """A pending operation the remote refuses is set aside, journaled once: written twice (also as an entry
    kept for another work tree), the journal read as damaged and the operation was lost."""
    work = _ready(remote)
    linked = tmp_path / "linked"
    git(work, "worktree", "add", "-q", "-b", "feature", str(linked))
    assert run_michi(linked, "task", "add", "bad", env={"MICHI_FAULT": "committed"}).exit_code == -9
    hook = remote.bare / "hooks" / "pre-receive"
    hook.write_text(
        "#!/bin/sh\nwhile read old new ref; do\n"
        "  if git diff $old $new | grep -q 'description.*bad'; then echo 'no bad' >&2; exit 1; fi\n"
        "done\n"
    )
    hook.chmod(0o755)

    assert run_michi(linked, "task", "add", "good").exit_code == 0
    assert _journal(work) == ["task add bad"]
    res = run_michi(linked, "task", "add", "next")

    assert "could not be read" not in res.stderr, res.stderr
    assert _journal(work) == ["task add bad"]
    assert _descriptions(remote.bare) == ["good", "next"]


# -- local hooks ------------------------------------------------------------------------------------------


def test_a_local_pre_push_hook_has_no_say_over_michis_task_commits(remote: Remote) -> None:
    work = _ready(remote)
    hook = work / ".git" / "hooks" / "pre-push"
    hook.write_text('#!/bin/sh\necho ran >> "$(git rev-parse --git-dir)/hook.log"\nexit 1\n')
    hook.chmod(0o755)

    assert run_michi(work, "task", "add", "one").exit_code == 0  # a failing test suite, a linter: not asked

    assert not (work / ".git" / "hook.log").exists()
    assert _descriptions(remote.bare) == ["one"]
    assert git(work, "push", "origin", "main", check=False) == ""  # the user's own pushes: asked
    assert (work / ".git" / "hook.log").read_text() == "ran\n"
