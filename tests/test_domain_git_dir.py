"""A domain is never git's own folder (ADR 0006). A clone made with `git clone --separate-git-dir` into
its own work tree keeps its git dir there under another name than `.git`: `--domain .gitdata` passed the
checks (they look for a folder named `.git`), and task files were written into the git dir, committed and
pushed."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import Remote, git


@pytest.fixture
def separated(cli, remote: Remote) -> Path:
    work = remote.root / "sep"
    git(
        remote.root,
        "clone",
        "-q",
        "--no-local",
        f"--separate-git-dir={work / '.gitdata'}",
        str(remote.bare),
        str(work),
    )
    assert (work / ".git").is_file()
    assert cli(work, "init").exit_code == 0
    return work


@pytest.mark.parametrize("domain", [".gitdata", ".gitdata/hooks", ".gitdata/refs/heads"])
def test_the_git_dir_is_no_domain(cli, remote: Remote, separated: Path, domain: str) -> None:
    before = remote.head()
    result = cli(separated, "--json", "task", "add", "into git", "--domain", domain)
    assert result.exit_code == 2, result.stdout
    assert result.json()["error"]["code"] == "bad_domain"
    assert "git's folder" in result.json()["error"]["message"]
    assert remote.head() == before
    assert not list((separated / ".gitdata").rglob(".tasks"))


def test_a_project_folder_of_that_clone_is_one(cli, remote: Remote, separated: Path) -> None:
    (separated / "app").mkdir()
    result = cli(separated, "--json", "task", "add", "in app", "--domain", "app")
    assert result.exit_code == 0, result.stdout
    assert git(remote.bare, "ls-tree", "-r", "--name-only", "main", "--", "app").startswith("app/.tasks/")


def test_a_work_tree_inside_a_bare_repository_keeps_its_domains(cli, remote: Remote) -> None:
    """Only a git dir inside the work tree is refused: a linked work tree may lie inside its bare
    repository (`git worktree add` in a bare clone), and all its folders are then inside the common dir."""
    bare = remote.root / "mine.git"
    git(remote.root, "clone", "-q", "--bare", "--no-local", str(remote.bare), str(bare))
    git(bare, "config", "remote.origin.fetch", "+refs/heads/*:refs/remotes/origin/*")
    git(bare, "worktree", "add", "-q", "wt", "main")
    work = bare / "wt"
    assert cli(work, "init").exit_code == 0
    (work / "app").mkdir()
    result = cli(work, "--json", "task", "add", "in app", "--domain", "app")
    assert result.exit_code == 0, result.stdout
