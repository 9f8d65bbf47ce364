"""Find the repository michi works in, by its files alone.

This runs on every command and in the pre-commit hook, so it must not start git or import GitPython
(ADR 0002): it walks up from the start folder to the first `.git` entry, as git itself does.
The lock and michi's private state belong to the repository, not to one work tree, so linked work trees
(`git worktree add`) resolve to the main work tree through the `commondir` file. When the shared git dir
is not a `.git` folder (`--separate-git-dir`, a bare repository with linked work trees) there is no main
work tree to name, so the lock lives inside the shared git dir instead: still one per repository.
"""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path

from michi.errors import NotARepository, UsageError
from michi.plain import Plain

LOCK_NAME = ".michi.lock"
CONFIG_NAME = ".michi.toml"


class RepoPaths(Plain):
    __slots__ = ("common_dir", "git_dir", "main_worktree", "worktree")

    def __init__(self, worktree: Path, git_dir: Path, common_dir: Path, main_worktree: Path | None) -> None:
        self.worktree = worktree  # top of the work tree this command runs in
        self.git_dir = git_dir  # this work tree's git dir (differs from common_dir in linked work trees)
        self.common_dir = common_dir  # the repository's shared git dir: refs, objects, info/exclude
        # top of the main work tree; None when the git dir is not `<top>/.git`
        self.main_worktree = main_worktree

    @property
    def lock_dir(self) -> Path:
        return (self.main_worktree or self.common_dir) / LOCK_NAME

    @property
    def config_file(self) -> Path:
        return (self.main_worktree or self.worktree) / CONFIG_NAME

    @property
    def state_dir(self) -> Path:
        """michi's private files (event log, journal, cache): inside git's dir, never in the work tree."""
        return self.common_dir / "michi"


def _gitdir_from_file(dot_git: Path) -> Path:
    text = dot_git.read_text(encoding="utf-8").strip()
    if not text.startswith("gitdir:"):
        raise NotARepository(f"{dot_git} is not a valid gitdir file", hint="repair it or re-clone")
    target = Path(text[len("gitdir:") :].strip())
    return target if target.is_absolute() else (dot_git.parent / target).resolve()


def _common_dir(git_dir: Path) -> Path:
    commondir_file = git_dir / "commondir"
    if not commondir_file.is_file():
        return git_dir
    rel = Path(commondir_file.read_text(encoding="utf-8").strip())
    return rel if rel.is_absolute() else (git_dir / rel).resolve()


def _is_git_dir(git_dir: Path, common: Path) -> bool:
    """What git checks (`is_git_directory`): a HEAD, and the objects and refs of the shared git dir."""
    return (git_dir / "HEAD").is_file() and (common / "objects").is_dir() and (common / "refs").is_dir()


# The places a caller may tell git to use instead of what it finds, and what michi found for each.
_TOLD = (
    ("GIT_DIR", "git dir"),
    ("GIT_WORK_TREE", "work tree"),
    ("GIT_COMMON_DIR", "common git dir"),
    ("GIT_OBJECT_DIRECTORY", "object folder"),  # michi writes objects itself: git must read them there
)


def _found(paths: RepoPaths, what: str) -> Path:
    return {
        "git dir": paths.git_dir,
        "work tree": paths.worktree,
        "common git dir": paths.common_dir,
        "object folder": paths.common_dir / "objects",
    }[what]


def check_told_places(paths: RepoPaths, acting_in: Path) -> RepoPaths:
    """`paths` when the git places of the environment (which every git process michi starts obeys) are
    its own. `GIT_DIR` naming another clone split one command in two: michi's lock, journal and objects
    here, git's refs, fetch and push there (a commit pushed from a repository that lacked it: exit 5
    blaming the remote). A relative value is read from the folder michi acts in, as git reads it."""
    for name, what in _TOLD:
        value = os.environ.get(name)
        if not value:
            continue
        named = (acting_in / value).resolve()
        if what.endswith("git dir") and named.is_file():  # a `.git` file naming the git dir, as git reads it
            with contextlib.suppress(OSError, UnicodeDecodeError, NotARepository):
                named = _gitdir_from_file(named).resolve()
        found = _found(paths, what).resolve()
        if named != found:
            raise NotARepository(
                f"{name}={value} names {named}, but michi acts in the repository at {paths.worktree}, "
                f"whose {what} is {found}",
                hint=f"unset {name}, or run michi in the repository it names (-C PATH)",
                code="git_env_mismatch",
            )
    return paths


def check_state_dir(paths: RepoPaths) -> RepoPaths:
    """`paths` when michi's state folder is a folder or not there yet (it is made when first needed).
    Anything else there (a file, a FIFO) stopped every command, reads too, with exit 1 "please report
    this as a bug"; one stat names it instead. A link is refused too, not followed: to a folder outside
    the repository it had michi's journal and lock files written there, dangling or looping it was an
    exit 1."""
    state = paths.state_dir
    try:
        mode = os.lstat(state).st_mode
    except (FileNotFoundError, NotADirectoryError):
        return paths
    except OSError:
        return paths  # what a command then meets there is its own error to report
    if not stat.S_ISDIR(mode):
        kind = "a link" if stat.S_ISLNK(mode) else "not a folder"
        raise UsageError(
            f"{state} is {kind}: michi keeps its journal, lock files and caches in a folder there",
            hint=f"move it away (mv {state} {state}.moved); michi makes the folder again",
            code="state_path_invalid",
        )
    return paths


def find_repo(start: Path | str | None = None) -> RepoPaths:
    """The repository of `start`, as git finds it: a `.git` folder that is no repository (empty, half
    deleted) is passed over, and a `.git` file naming one that is gone (a linked work tree whose main
    repository moved) is an error, never an empty repository to answer from or write michi's state into."""
    here = Path(start if start is not None else os.getcwd()).resolve()
    if not here.is_dir():
        raise NotARepository(f"{here} is not a directory", hint="pass an existing folder to -C")
    for folder in (here, *here.parents):
        dot_git = folder / ".git"
        if dot_git.is_dir():
            git_dir = dot_git
        elif dot_git.is_file():
            git_dir = _gitdir_from_file(dot_git)
        else:
            continue
        try:
            common = _common_dir(git_dir)
        except OSError:
            common = git_dir
        if not _is_git_dir(git_dir, common):
            if dot_git.is_dir():
                continue
            raise NotARepository(
                f"{dot_git} names {git_dir}, which is not a git repository (moved or deleted?)",
                hint="repair it ('git worktree repair' from the main work tree), or clone again",
            )
        main = common.parent if common.name == ".git" else None
        return RepoPaths(worktree=folder, git_dir=git_dir, common_dir=common, main_worktree=main)
    raise NotARepository(
        f"{here} is not inside a git repository",
        hint="run michi inside a git work tree, or pass -C PATH (git init makes one)",
    )
