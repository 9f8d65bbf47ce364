"""A remote set back by a force-push: an admin dropped a commit of michi's that this clone had landed.

michi's push is leased on the tip it built on (ADR 0004), so the dropped commit never goes back as a
fast-forward; but the clone whose change was dropped was not told: its task vanished on its next command,
or, once a read's fetch had moved the remote-tracking branch, stayed on its local branch for `michi sync`
to push again as "stranded" work. The next changing command or sync says, once, what the remote lost
(the task and the commit), leaves it out of the local branch as `git pull --rebase` would, and pushes
nothing of it again: whoever set the remote back meant it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import Remote, git, run_michi


def _descriptions(bare: Path) -> list[str]:
    names = git(bare, "ls-tree", "-r", "--name-only", "main", "--", ".tasks").splitlines()
    return sorted(
        json.loads(git(bare, "show", f"main:{n}"))["description"] for n in names if n.endswith(".json")
    )


def _rewound(remote: Remote) -> tuple[Path, str]:
    """A clone that landed `kept` and then `dropped one` (task 2), which an admin then removed from the
    remote; the dropped commit's id."""
    work = remote.clone("work")
    for args in (["init"], ["task", "add", "kept"], ["task", "add", "dropped one"]):
        assert run_michi(work, *args).exit_code == 0
    dropped = remote.head()
    git(remote.bare, "update-ref", "refs/heads/main", "main~1")  # `git push --force` of main~1
    return work, dropped


def _notes(result_json: dict) -> list[str]:
    return result_json.get("transaction", result_json)["notes"]


def _told(notes: list[str]) -> list[str]:
    """The notes saying what the remote lost."""
    return [n for n in notes if "set back" in n]


@pytest.mark.parametrize("first", ["task add", "sync", "a read's fetch, then task add"])
def test_the_next_command_names_what_the_remote_dropped_and_never_pushes_it_again(
    remote: Remote, first: str
) -> None:
    work, dropped = _rewound(remote)
    if first.startswith("a read"):
        assert run_michi(work, "task", "list", "--fetch").exit_code == 0  # moves origin/main back
        # The dropped commit is still on the local branch, but it is no offline work to push.
        checked = run_michi(work, "--json", "status", "--check")
        assert (checked.exit_code, json.loads(checked.stdout)) == (0, [])
    args = ["sync"] if first == "sync" else ["task", "add", "after"]

    result = run_michi(work, "--json", *args)

    assert result.exit_code == 0, result.stdout + result.stderr
    told = _told(_notes(json.loads(result.stdout)))
    assert len(told) == 1, result.stdout
    assert "`task add 2`" in told[0] and '"dropped one"' in told[0] and dropped[:10] in told[0]
    assert "does not push" in told[0]
    assert git(work, "rev-parse", "main") == git(work, "rev-parse", "origin/main") == remote.head()
    for _ in range(2):  # said once; sync pushes nothing of it
        again = run_michi(work, "--json", "sync")
        assert again.exit_code == 0, again.stdout
        assert _told(_notes(json.loads(again.stdout))) == []
    assert git(remote.bare, "merge-base", "--is-ancestor", dropped, "main", check=False) == ""
    assert "dropped one" not in _descriptions(remote.bare)
    assert run_michi(work, "status", "--check").exit_code == 0


def test_the_users_own_commit_on_a_dropped_one_stays_and_the_note_goes_to_stderr(remote: Remote) -> None:
    work, dropped = _rewound(remote)
    (work / "notes.txt").write_text("mine\n")
    git(work, "add", "notes.txt")
    git(work, "commit", "-q", "-m", "my own work")  # on top of the dropped commit, not pushed

    result = run_michi(work, "task", "add", "after")

    assert result.exit_code == 0, result.stderr
    assert len(_told(result.stderr.splitlines())) == 1, result.stderr
    assert git(work, "log", "--format=%s", "origin/main..main") == "my own work"  # replayed without it
    assert (work / "notes.txt").read_text() == "mine\n"
    assert run_michi(work, "sync").exit_code == 0
    assert git(remote.bare, "merge-base", "--is-ancestor", dropped, "main", check=False) == ""


def test_pending_work_on_a_dropped_task_never_lands_on_the_task_that_took_its_id(remote: Remote) -> None:
    """Offline changes to task 2 made before the remote dropped it: another clone's add then took id 2
    (only a force-push frees an id). They meant the dropped task (its file, by uuid), so `sync` refuses
    them (`task_not_found`) instead of annotating and finishing the other clone's task 2."""
    work = remote.clone("work")
    for args in (["init"], ["task", "add", "kept"], ["task", "add", "dropped one"]):
        assert run_michi(work, *args).exit_code == 0
    assert run_michi(work, "task", "annotate", "2", "about the dropped one", "--offline").exit_code == 0
    assert run_michi(work, "task", "done", "2", "--offline").exit_code == 0
    git(remote.bare, "update-ref", "refs/heads/main", "main~1")  # `git push --force` of main~1
    other = remote.clone("other")
    assert run_michi(other, "task", "add", "the other clone's").exit_code == 0
    theirs = run_michi(other, "--json", "task", "show", "2").json()
    assert theirs["description"] == "the other clone's"

    synced = run_michi(work, "--json", "sync")
    refused = synced.json().get("refused") or synced.json()["error"].get("refused")
    assert [r["code"] for r in refused] == ["task_not_found", "task_not_found"], synced.stdout
    now = run_michi(other, "--json", "task", "show", "2", "--fetch").json()
    assert now["uuid"] == theirs["uuid"] and now["status"] == "pending" and now["annotations"] == []


def _hand_edit_of_the_dropped_task(work: Path) -> None:
    """The user's own commit, not pushed, editing the dropped task's file: a path the remote changed (the
    file is gone there), so michi cannot replay it and leaves the branch as it was."""
    name = next(
        n for n in git(work, "show", "--name-only", "--format=", "HEAD").splitlines() if n.endswith(".json")
    )
    data = json.loads((work / name).read_text())
    (work / name).write_text(json.dumps({**data, "description": "edited by hand"}))
    git(work, "commit", "-q", "--no-verify", "-am", "my hand edit")


def test_a_branch_left_holding_a_dropped_change_names_it_once_and_the_check_reports_it(
    remote: Remote,
) -> None:
    work, dropped = _rewound(remote)
    _hand_edit_of_the_dropped_task(work)
    mine = git(work, "rev-parse", "main")

    first = run_michi(work, "task", "add", "after")
    assert first.exit_code == 0, first.stderr
    assert len(_told(first.stderr.splitlines())) == 1, first.stderr

    for args in (["task", "add", "later"], ["sync"], ["task", "add", "later still"]):
        again = run_michi(work, "--json", *args)
        assert again.exit_code == 0, again.stdout + again.stderr
        notes = _notes(json.loads(again.stdout))
        assert _told(notes) == [], notes  # named once, not on every command
        kept = [n for n in notes if "left as it was" in n]  # what still holds, with what to do
        assert len(kept) == 1 and dropped[:10] in kept[0] and "git rebase -i origin/main" in kept[0], notes
    assert git(work, "rev-parse", "main") == mine  # the user's commit kept, and the dropped one under it

    checked = run_michi(work, "--json", "status", "--check")
    assert checked.exit_code == 32, checked.stdout  # the bit of local work the remote lacks
    [problem] = json.loads(checked.stdout)
    assert problem["code"] == "offline_unpushed" and problem["dropped"] == [dropped], problem
    assert "`task add 2`" in problem["message"] and "git rebase -i origin/main" in problem["message"]

    git(work, "reset", "-q", "--hard", "origin/main")  # the user leaves both out
    assert run_michi(work, "status", "--check").exit_code == 0
    assert _told(_notes(run_michi(work, "--json", "sync").json())) == []


def test_what_was_named_is_never_read_or_written_through_a_link(remote: Remote, tmp_path: Path) -> None:
    """michi remembers the dropped commits it named in its state folder; a link planted there (naming the
    dropped commit, to silence the note) is neither read nor written through, only replaced."""
    work, dropped = _rewound(remote)
    _hand_edit_of_the_dropped_task(work)
    outside = tmp_path / "outside"
    outside.write_text(f"{dropped}\n")
    told = work / ".git" / "michi" / "dropped-told"
    told.symlink_to(outside)

    first = run_michi(work, "task", "add", "after")
    second = run_michi(work, "task", "add", "later")

    assert (first.exit_code, second.exit_code) == (0, 0), first.stderr + second.stderr
    assert len(_told(first.stderr.splitlines())) == 1, first.stderr
    assert _told(second.stderr.splitlines()) == [], second.stderr
    assert outside.read_text() == f"{dropped}\n" and not told.is_symlink()
