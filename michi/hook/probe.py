"""Cheap questions the hook's fast path asks with nothing but `os` (ADR 0005).

Each answer may only be "certainly nothing to check" or "look closer": every doubt goes to the full
check in `michi.hook.check`, which uses `michi.repo` and `michi.git` like the rest of michi. Importing
those costs ~35 ms under `python -S` (pathlib, dataclasses, typing, subprocess), which is most of the
hook's budget, so this module mirrors the two facts it needs instead; tests pin it to the originals.
"""

from __future__ import annotations

import os

LOCK_NAME = ".michi.lock"  # == michi.repo.LOCK_NAME (pinned by a test)
# The files michi owns: task files of both layouts (flat `.tasks/*.json`, fan-out `.tasks/<2 hex>/*.json`,
# ADR 0006) in any folder, as `michi.git` lists them (== michi.git.TASK_PATHSPECS, pinned by a test).
# `top` anchors the pattern at the work tree's top even when the hook is run from a subfolder.
TASK_PATHSPECS = (":(top,glob)**/.tasks/*.json", ":(top,glob)**/.tasks/[0-9a-f][0-9a-f]/*.json")


def _gitdir_from_file(dot_git: str) -> str | None:
    try:
        with open(dot_git, encoding="utf-8") as fh:
            text = fh.read().strip()
    except (OSError, UnicodeDecodeError):
        return None
    if not text.startswith("gitdir:"):
        return None
    target = text[len("gitdir:") :].strip()
    if os.path.isabs(target):
        return target
    return os.path.realpath(os.path.join(os.path.dirname(dot_git), target))


def common_dir(start: str) -> str | None:
    """The shared git dir of the repository around `start` (rules of `michi.repo.find_repo`)."""
    folder = os.path.realpath(start)
    while True:
        dot_git = os.path.join(folder, ".git")
        git_dir: str | None = None
        if os.path.isdir(dot_git):
            git_dir = dot_git
        elif os.path.isfile(dot_git):
            git_dir = _gitdir_from_file(dot_git)
            if git_dir is None:
                return None
        if git_dir is not None:
            try:
                with open(os.path.join(git_dir, "commondir"), encoding="utf-8") as fh:
                    rel = fh.read().strip()
                return rel if os.path.isabs(rel) else os.path.realpath(os.path.join(git_dir, rel))
            except FileNotFoundError:
                return git_dir
            except (OSError, UnicodeDecodeError):
                return None
        parent = os.path.dirname(folder)
        if parent == folder:
            return None
        folder = parent


def lock_dir(start: str) -> str | None:
    """The repo lock's path for the repository around `start` (rules of `michi.repo.find_repo`)."""
    common = common_dir(start)
    if common is None:
        return None
    main = os.path.dirname(common) if os.path.basename(common) == ".git" else common
    return os.path.join(main, LOCK_NAME)


def task_files_staged() -> bool | None:
    """Does the commit being made touch task files? None when git cannot say (the full check will).

    One `git diff --cached --quiet` (exit 1 = differences) started with `posix_spawn`: the subprocess
    module alone costs ~13 ms to import here. The environment passes through, so a temporary index
    (`git commit -a`, `git commit PATH`) named by GIT_INDEX_FILE is the one compared.
    """
    quiet = [
        (os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0),
        (os.POSIX_SPAWN_OPEN, 2, os.devnull, os.O_WRONLY, 0),
    ]
    argv = ["git", "diff", "--cached", "--quiet", "--", *TASK_PATHSPECS]
    try:
        env = {k: v for k, v in os.environ.items() if k != "MICHI_LOCK_TOKEN"}  # never handed to git
        pid = os.posix_spawnp("git", argv, env, file_actions=quiet)
        _, status = os.waitpid(pid, 0)
    except OSError:
        return None
    return {0: False, 1: True}.get(os.waitstatus_to_exitcode(status))
