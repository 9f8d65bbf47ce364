"""The hook's full judgement: the repo lock first, then hand edits of task files.

Reached when the fast path (`michi.hook.run`) found a lock folder or staged task files, or could not
tell. Returns the warnings to print when the commit may go ahead; raises a refusal otherwise.
"""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Mapping

from michi.hook import messages
from michi.lock import procs
from michi.lock.record import TOKEN_ENV, CorruptRecord, judge, read_owner, same_machine
from michi.repo import RepoPaths


def _lock_warnings(repo: RepoPaths, environ: Mapping[str, str], now: float) -> tuple[list[str], bool]:
    """(warnings, own): `own` is True when the commit comes from the lock's holder (token match)."""
    lock_dir = repo.lock_dir
    try:
        st = os.lstat(lock_dir)
    except FileNotFoundError:
        return [], False
    # Never follow a symlink or read a file in the lock's place: the lock refuses them too (ADR 0003).
    if stat.S_ISLNK(st.st_mode):
        raise messages.unreadable(f"{lock_dir.name} is a symlink, not a folder", messages.NOT_A_FOLDER_HINT)
    if not stat.S_ISDIR(st.st_mode):
        raise messages.unreadable(f"{lock_dir.name} is a file, not a folder", messages.NOT_A_FOLDER_HINT)
    try:
        owner = read_owner(lock_dir)
    except CorruptRecord as exc:
        raise messages.unreadable(str(exc)) from None
    if owner is None and not os.path.lexists(lock_dir):
        return [], False  # released between our two looks: no lock
    token = environ.get(TOKEN_ENV, "")
    # michi's own commits: the holder hands its token to its git children; our parent is git, not the
    # holder, so PIDs cannot tell (ADR 0005).
    if owner is not None and owner.admits(token):  # the holder's token, or a nested hold's (ADR 0003)
        return [], True
    # A script holding the lock (`token=$(michi lock acquire)`) commits with git, whose child we are:
    # a commit from the holder or any of its descendants is the holder's own (ADR 0005).
    if owner is not None and same_machine(owner) and procs.is_descendant(owner.pid, owner.pid_ticks):
        return [], True
    verdict = judge(owner, lock_mtime=st.st_mtime, now=now)
    if not verdict.stale:
        raise messages.lock_held(owner, now, token_given=bool(token), orphans=verdict.orphans)
    return [messages.stale(owner, verdict.reason, now)], False


def check(repo: RepoPaths, environ: Mapping[str, str] | None = None, now: float | None = None) -> list[str]:
    """Warnings for a commit that may go ahead; raises LockHeld, LockUnreadable or HandEdit."""
    env = os.environ if environ is None else environ
    warnings, own = _lock_warnings(repo, env, time.time() if now is None else now)
    if own:
        return warnings
    # Imported here: michi's own commits and refusals by the lock never need them (ADR 0005).
    from michi import config, git

    paths = git.staged_task_paths(repo.worktree)
    if paths and _michis(repo) and not config.load(repo.config_file, env).allow_hand_edits:
        raise messages.hand_edit(paths)
    return warnings


def _michis(repo: RepoPaths) -> bool:
    """Does michi keep tasks here? `michi init` writes `.michi.toml` and `.michi/` (its id counter, its
    layout). A hook installed
    once for every repository (a global `core.hooksPath`) must not refuse another tool's `.tasks/` files
    in a repository michi never touched."""
    return repo.config_file.exists() or (repo.worktree / ".michi").is_dir()
