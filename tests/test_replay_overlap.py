"""The user's unpushed commit is laid over the remote's new tip only where no path of it meets the remote's
changes: not the same path, nor one inside the other (a file where a folder of tasks came, or the other way
round). Otherwise the branch stays where it was, with a note, as `git rebase` would stop (ADR 0004)."""

from __future__ import annotations

from pathlib import Path

from conftest import Remote, git


def _tree(where: Path, rev: str = "main") -> list[str]:
    return git(where, "ls-tree", "-r", "--name-only", rev).splitlines()


def test_a_users_file_never_replaces_a_domain_another_clone_made(cli, remote: Remote, repo: Path) -> None:
    assert cli(repo, "init").exit_code == 0
    other = remote.clone("other")
    (other / "docs").mkdir()
    assert cli(other, "task", "add", "--domain", "docs", "a docs task").exit_code == 0
    on_remote = [p for p in _tree(remote.bare) if p.startswith("docs/")]
    assert on_remote

    (repo / "docs").write_text("the user's notes\n")
    git(repo, "add", "docs")
    git(repo, "commit", "-qm", "user: a file named docs")
    mine = git(repo, "rev-parse", "main")

    added = cli(repo, "task", "add", "here", "--json")
    assert added.exit_code == 0, added.stdout
    assert git(repo, "rev-parse", "main") == mine  # left as it was: not laid over the docs folder
    assert any("left as it was" in n for n in added.json()["transaction"]["notes"])
    assert git(repo, "show", "main:docs") == "the user's notes"
    assert all(p in _tree(remote.bare) for p in on_remote)  # the remote keeps the other clone's task
    assert (repo / "docs").read_text() == "the user's notes\n"


def test_a_users_folder_never_goes_where_the_remote_made_a_file(cli, remote: Remote, repo: Path) -> None:
    assert cli(repo, "init").exit_code == 0
    other = remote.clone("other")
    (other / "notes").write_text("theirs\n")
    git(other, "add", "notes")
    git(other, "commit", "-qm", "other: a file named notes")
    git(other, "push", "-q", "origin", "main")

    (repo / "notes").mkdir()
    (repo / "notes" / "a.txt").write_text("mine\n")
    git(repo, "add", "notes")
    git(repo, "commit", "-qm", "user: a folder named notes")
    mine = git(repo, "rev-parse", "main")

    assert cli(repo, "task", "add", "here").exit_code == 0
    assert git(repo, "rev-parse", "main") == mine
    assert git(remote.bare, "show", "main:notes") == "theirs"
    assert (repo / "notes" / "a.txt").read_text() == "mine\n"


def test_a_commit_beside_the_remotes_changes_is_still_replayed(cli, remote: Remote, repo: Path) -> None:
    assert cli(repo, "init").exit_code == 0
    other = remote.clone("other")
    (other / "docs").mkdir()
    assert cli(other, "task", "add", "--domain", "docs", "a docs task").exit_code == 0
    (repo / "docsx").write_text("a name that only starts like the folder\n")
    git(repo, "add", "docsx")
    git(repo, "commit", "-qm", "user: docsx")
    assert cli(repo, "task", "add", "here").exit_code == 0
    assert git(repo, "log", "-1", "--format=%s", "main") == "user: docsx"  # replayed on the new tip
    assert any(p.startswith("docs/.tasks/") for p in _tree(repo))
