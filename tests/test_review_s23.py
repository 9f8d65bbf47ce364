"""Second review of the s23 change: each test shows a bug found, and fails until it is fixed."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import Remote, git, run_michi


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
