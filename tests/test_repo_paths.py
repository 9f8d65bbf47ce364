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


def test_a_gitdir_file_naming_no_repository_is_not_a_repository(cli, tmp_path: Path) -> None:
    """A linked work tree whose main repository was moved keeps a `.git` file naming a folder that is gone:
    michi must not answer from nothing (`next` saying "all work is finished, stop" to every agent), nor
    create michi's state where the file points."""
    tree = tmp_path / "wt"
    tree.mkdir()
    gone = tmp_path / "moved" / ".git" / "worktrees" / "wt"
    (tree / ".git").write_text(f"gitdir: {gone}\n")
    for args in (("--agent", "a", "task", "next", "--claim"), ("task", "list"), ("task", "add", "x")):
        result = cli(tree, *args, "--json")
        assert result.exit_code == 2, (args, result.stdout)
        assert (
            result.json()["error"]["code"] == "not_a_repository"
            and str(gone) in result.json()["error"]["message"]
        )
    assert not (tmp_path / "moved").exists()


def test_an_empty_git_folder_is_passed_over_as_git_does(cli, repo: Path) -> None:
    """A folder named `.git` that is no repository (an empty one, a half-deleted clone) is not where the
    repository is: git looks further up, and so does michi, instead of writing its state into it."""
    assert cli(repo, "init").exit_code == 0
    inner = repo / "vendor" / "thing"
    (inner / ".git").mkdir(parents=True)
    added = cli(inner, "task", "add", "from inside", "--json")
    assert added.exit_code == 0, added.stdout
    assert added.json()["domain"] == "."
    assert list((inner / ".git").iterdir()) == []


def test_a_git_dir_naming_another_repository_is_refused_before_anything(remote, tmp_path: Path) -> None:
    """`GIT_DIR` (and `GIT_WORK_TREE`) pointing at another clone while michi runs in this one: michi found
    its repository (lock, journal, state) by the folder, but every git process it started went to the
    other. The commit was written here and pushed from there: exit 5 `remote_rejected` blaming the
    remote's hooks. The places git is told to use must be the repository michi acts in (exit 2, naming
    the variable), and nothing is written to either clone or the remote."""
    from conftest import run_michi

    here, there = remote.clone("here"), remote.clone("there")
    assert run_michi(here, "init").exit_code == 0
    git(there, "pull", "-q")
    tips = [git(r, "rev-parse", "main") for r in (here, there, remote.bare)]
    for env in (
        {"GIT_DIR": str(there / ".git"), "GIT_WORK_TREE": str(there)},
        {"GIT_DIR": str(there / ".git")},
        {"GIT_WORK_TREE": str(there)},
        {"GIT_OBJECT_DIRECTORY": str(there / ".git" / "objects")},  # was exit 5: "git object ... is missing"
    ):
        added = run_michi(here, "--json", "task", "add", "crossed", env=env)
        assert added.exit_code == 2, (env, added.stdout, added.stderr)
        error = added.json()["error"]
        assert error["code"] == "git_env_mismatch", error
        assert next(iter(env)) in error["message"], error
        assert [git(r, "rev-parse", "main") for r in (here, there, remote.bare)] == tips
    assert not (there / ".git" / "michi").exists()
    # The same places named relatively, from a subfolder, are this repository's: allowed.
    (here / "sub").mkdir()
    env = {"GIT_DIR": "../.git", "GIT_WORK_TREE": ".."}
    assert run_michi(here / "sub", "--json", "task", "add", "fine", env=env).exit_code == 0
    # In a linked work tree `.git` is a file naming its git dir, and git follows it.
    git(here, "worktree", "add", "-q", str(tmp_path / "linked"), "-b", "feature")
    listed = run_michi(tmp_path / "linked", "--json", "task", "list", env={"GIT_DIR": ".git"})
    assert listed.exit_code == 0, listed.stdout
