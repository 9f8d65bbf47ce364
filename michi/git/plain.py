"""git through plain subprocesses, for the pre-commit hook's hot path (ADR 0005): no GitPython."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

from michi.errors import GitFailed


def quick(cwd: Path, *args: str, env: Mapping[str, str] | None = None) -> str:
    """Run one git command without GitPython; for the hot paths of the pre-commit hook only (ADR 0005)."""
    proc = subprocess.run(
        ["git", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env=None if env is None else {**os.environ, **env},
        check=False,
    )
    if proc.returncode != 0:
        raise GitFailed(f"git {args[0]} failed: {proc.stderr.strip() or proc.returncode}")
    return proc.stdout


def staged_paths(worktree: Path) -> list[str]:
    """Paths the index changes relative to HEAD (what `git commit` is about to record)."""
    out = quick(worktree, "diff", "--cached", "--name-only", "-z", "--no-renames")
    return [p for p in out.split("\0") if p]


# `.tasks/*.json` in any folder (as `_is_task_file`), anchored at the top even when run from a subfolder.


# `.tasks/*.json` in any folder (as `_is_task_file`), anchored at the top even when run from a subfolder.
TASK_PATHSPEC = ":(top,glob)**/.tasks/*.json"


def staged_task_paths(worktree: Path) -> list[str]:
    """Task files the commit being made adds, changes or deletes (the pre-commit hook, ADR 0005)."""
    out = quick(worktree, "diff", "--cached", "--name-only", "-z", "--no-renames", "--", TASK_PATHSPEC)
    return [p for p in out.split("\0") if p]


def hooks_dir(worktree: Path) -> Path:
    """Where git looks for hooks here: honours core.hooksPath and linked work trees."""
    out = quick(worktree, "rev-parse", "--path-format=absolute", "--git-path", "hooks").strip()
    return Path(out)


def config_get(worktree: Path, key: str) -> str | None:
    proc = subprocess.run(["git", "config", "--get", key], cwd=worktree, capture_output=True, text=True)
    return proc.stdout.strip() if proc.returncode == 0 else None


def run(cwd: Path, args: Sequence[str]) -> str:
    """Escape hatch for code paths that are not yet behind a named function; prefer a named one."""
    return quick(cwd, *args)
