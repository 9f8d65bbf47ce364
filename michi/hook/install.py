"""`michi hook install` / `uninstall`: write michi's pre-commit hook where git looks for it.

Git's hooks folder is asked from git itself, so `core.hooksPath` and linked work trees (which share the
main repository's hooks) are honoured. A hook already there is moved aside, byte for byte (a rename,
so even its mode and inode stay), chained from michi's script, and put back by `uninstall`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from michi import git
from michi.atomic import write_atomic
from michi.errors import Conflict
from michi.hook import script
from michi.repo import RepoPaths
from michi.results import Result


@dataclass(frozen=True)
class HookInstalled(Result):
    hook: str
    chained: str | None  # where the hook that was there before now lives (michi's script runs it)
    refreshed: bool  # michi's hook was there already and has been rewritten

    def summary(self) -> str:
        verb = "Refreshed" if self.refreshed else "Installed"
        text = f"{verb} michi's pre-commit hook at {self.hook}"
        if self.chained:
            text += f"\nYour previous pre-commit hook is kept at {self.chained} and still runs after michi's"
        return text


@dataclass(frozen=True)
class HookUninstalled(Result):
    hook: str
    removed: bool  # False: michi's hook was not there, nothing changed
    restored: bool  # the chained hook is back in its place

    def summary(self) -> str:
        if not self.removed:
            return f"michi's pre-commit hook is not installed at {self.hook}; nothing changed"
        if self.restored:
            return f"Removed michi's pre-commit hook and restored your previous one at {self.hook}"
        return f"Removed michi's pre-commit hook from {self.hook}"


def _paths(repo: RepoPaths) -> tuple[Path, Path]:
    hooks = git.hooks_dir(repo.worktree)
    return hooks / "pre-commit", hooks / script.CHAINED


def install(repo: RepoPaths) -> HookInstalled:
    hook, chained = _paths(repo)
    hook.parent.mkdir(parents=True, exist_ok=True)
    ours = script.is_michis(hook)
    foreign = not ours and os.path.lexists(hook)
    if foreign and os.path.lexists(chained):
        raise Conflict(
            f"{hook} is not michi's, and {chained} (a hook michi chained earlier) is in the way",
            hint=f"decide which one to keep, move the other out of {hook.parent}, and install again",
        )
    if hook.is_dir() and not hook.is_symlink():
        raise Conflict(f"{hook} is a folder, not a hook", hint="remove or rename it and install again")
    if foreign:
        os.rename(hook, chained)  # the same file, untouched: uninstall renames it back
    write_atomic(hook, script.render().encode(), mode=0o755)
    return HookInstalled(
        hook=str(hook), chained=str(chained) if os.path.lexists(chained) else None, refreshed=ours
    )


def uninstall(repo: RepoPaths) -> HookUninstalled:
    hook, chained = _paths(repo)
    if not script.is_michis(hook):
        return HookUninstalled(hook=str(hook), removed=False, restored=False)
    if os.path.lexists(chained):
        os.replace(chained, hook)
        return HookUninstalled(hook=str(hook), removed=True, restored=True)
    hook.unlink()
    return HookUninstalled(hook=str(hook), removed=True, restored=False)
