"""All of michi's git access, as small named functions: one git action each, the repo passed in.

GitPython is imported lazily (ADR 0002): `import git` costs ~85 ms, which the pre-commit hook and the lock
commands must not pay. The few helpers the hook needs (`quick`) run the git binary directly for the same
reason (ADR 0005); everything else goes through GitPython.
"""

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
