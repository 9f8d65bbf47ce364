"""`michi hook install` / `uninstall`: write michi's pre-commit and pre-push hooks where git looks for them.

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
    push_hook: str  # the pre-push hook, installed with it (ADR 0005)
    push_chained: str | None

    def summary(self) -> str:
        verb = "Refreshed" if self.refreshed else "Installed"
        text = f"{verb} michi's pre-commit hook at {self.hook}"
        if self.chained:
            text += f"\nYour previous pre-commit hook is kept at {self.chained} and still runs after michi's"
        text += f"\nand its pre-push hook at {self.push_hook} (it refuses pushing unsynced offline work)"
        if self.push_chained:
            text += (
                f"\nYour previous pre-push hook is kept at {self.push_chained} and still runs after michi's"
            )
        return text


@dataclass(frozen=True)
class HookUninstalled(Result):
    hook: str
    removed: bool  # False: michi's hook was not there, nothing changed
    restored: bool  # the chained hook is back in its place
    push_removed: bool = False  # the same for the pre-push hook
    push_restored: bool = False

    def summary(self) -> str:
        if not self.removed:
            text = f"michi's pre-commit hook is not installed at {self.hook}"
            text += "" if self.push_removed else "; nothing changed"
        elif self.restored:
            text = f"Removed michi's pre-commit hook and restored your previous one at {self.hook}"
        else:
            text = f"Removed michi's pre-commit hook from {self.hook}"
        if self.push_removed:
            text += "\nRemoved its pre-push hook" + (
                " and restored your previous one" if self.push_restored else ""
            )
        return text


# hook name -> (where michi keeps the hook that was there before, the script michi writes there)
_HOOKS = {
    "pre-commit": (script.CHAINED, script.render),
    "pre-push": (script.PUSH_CHAINED, script.render_push),
}


def _paths(repo: RepoPaths, name: str) -> tuple[Path, Path]:
    hooks = git.hooks_dir(repo.worktree)
    return hooks / name, hooks / _HOOKS[name][0]


def _foreign(hook: Path, chained: Path) -> bool:
    """Is a hook not michi's at `hook`, to be chained? Refuses what cannot be, before anything is written."""
    foreign = not script.is_michis(hook) and os.path.lexists(hook)
    if foreign and os.path.lexists(chained):
        raise Conflict(
            f"{hook} is not michi's, and {chained} (a hook michi chained earlier) is in the way",
            hint=f"decide which one to keep, move the other out of {hook.parent}, and install again",
        )
    if hook.is_dir() and not hook.is_symlink():
        raise Conflict(f"{hook} is a folder, not a hook", hint="remove or rename it and install again")
    return foreign


def install(repo: RepoPaths) -> HookInstalled:
    placed = {name: _paths(repo, name) for name in _HOOKS}
    ours = script.is_michis(placed["pre-commit"][0])
    foreign = {name: _foreign(*paths) for name, paths in placed.items()}  # both checked, then both written
    for name, (hook, chained) in placed.items():
        hook.parent.mkdir(parents=True, exist_ok=True)
        if foreign[name]:
            os.rename(hook, chained)  # the same file, untouched: uninstall renames it back
        write_atomic(hook, _HOOKS[name][1]().encode(), mode=0o755)
    (hook, chained), (push, push_chained) = placed["pre-commit"], placed["pre-push"]
    return HookInstalled(
        hook=str(hook),
        chained=str(chained) if os.path.lexists(chained) else None,
        refreshed=ours,
        push_hook=str(push),
        push_chained=str(push_chained) if os.path.lexists(push_chained) else None,
    )


def _remove(repo: RepoPaths, name: str) -> tuple[bool, bool]:
    """(removed, restored) for michi's hook `name`."""
    hook, chained = _paths(repo, name)
    if not script.is_michis(hook):
        return False, False
    if os.path.lexists(chained):
        os.replace(chained, hook)
        return True, True
    hook.unlink()
    return True, False


def uninstall(repo: RepoPaths) -> HookUninstalled:
    removed, restored = _remove(repo, "pre-commit")
    push_removed, push_restored = _remove(repo, "pre-push")
    hook = _paths(repo, "pre-commit")[0]
    return HookUninstalled(str(hook), removed, restored, push_removed, push_restored)
