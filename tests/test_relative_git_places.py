"""Relative git places in the environment reach git as git itself reads them: GIT_DIR from the folder
the command acts in (a real folder: `-C` through a symlink resolves it), GIT_INDEX_FILE from the top of
the work tree."""

from __future__ import annotations

from pathlib import Path

from conftest import Remote, git, run_michi


def test_a_relative_git_index_file_is_read_from_the_top_as_git_reads_it(remote: Remote) -> None:
    """git reads a relative GIT_INDEX_FILE from the top of the work tree (it names it `.git/index` in a
    commit hook), wherever the command started: michi read it from the subfolder it acts in, called the
    work tree's own index "another index" and left the local branch behind."""
    repo = remote.clone("work")
    sub = repo / "sub"
    sub.mkdir()
    assert git(sub, "ls-files", env={"GIT_INDEX_FILE": ".git/index"}) == ""  # git reads the real index
    assert "README.md" in git(sub, "ls-files", "--full-name", "..", env={"GIT_INDEX_FILE": ".git/index"})
    done = run_michi(sub, "task", "add", "from a subfolder", "--json", env={"GIT_INDEX_FILE": ".git/index"})
    assert done.exit_code == 0, done.stderr
    assert "was not updated" not in done.stderr
    assert git(repo, "rev-parse", "main") == remote.head()


def test_a_relative_git_dir_under_dash_c_through_a_symlink_reaches_git_as_git_reads_it(
    remote: Remote, tmp_path: Path
) -> None:
    """`git -C LINK` with GIT_DIR=../.git reads `..` from the folder the link leads to (the repository);
    michi's check agreed (it resolves), but the git processes it starts were handed `LINK/../.git`
    joined as text, a folder that does not exist: git_failed ("cat-file stopped") after the check let it
    through."""
    repo = remote.clone("work")
    (repo / "sub").mkdir()
    link = tmp_path / "elsewhere" / "link"
    link.parent.mkdir()
    link.symlink_to(repo / "sub")
    told = {"GIT_DIR": "../.git", "GIT_WORK_TREE": ".."}
    assert git(tmp_path, "-C", str(link), "rev-parse", "--absolute-git-dir", env=told) == str(repo / ".git")
    done = run_michi(tmp_path, "-C", str(link), "task", "add", "through the link", "--json", env=told)
    assert done.exit_code == 0, done.stdout + done.stderr
    assert git(repo, "rev-parse", "main") == remote.head()
