"""One lock per repository, whatever the layout of its work trees (found by review: two holders)."""

from __future__ import annotations

from pathlib import Path

from conftest import git

from michi.repo import find_repo


def test_linked_worktrees_of_a_separate_git_dir_share_one_lock(tmp_path: Path) -> None:
    work = tmp_path / "work"
    git(tmp_path, "init", "-q", "-b", "main", "--separate-git-dir", str(tmp_path / "repo.git"), str(work))
    (work / "a").write_text("a\n")
    git(work, "add", "a")
    git(work, "commit", "-qm", "a")
    git(work, "worktree", "add", "-q", str(tmp_path / "linked"), "-b", "feature")
    main, linked = find_repo(work), find_repo(tmp_path / "linked")
    assert main.lock_dir == linked.lock_dir == (tmp_path / "repo.git" / ".michi.lock").resolve()


def test_linked_worktrees_of_a_normal_clone_share_the_main_worktrees_lock(
    local_repo: Path, tmp_path: Path
) -> None:
    git(local_repo, "worktree", "add", "-q", str(tmp_path / "linked"), "-b", "feature")
    assert (
        find_repo(tmp_path / "linked").lock_dir
        == find_repo(local_repo).lock_dir
        == local_repo.resolve() / ".michi.lock"
    )
