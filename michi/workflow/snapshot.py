"""Read-only views of the task branch: no lock, no network unless asked (`--fetch`)."""

from __future__ import annotations

import contextlib
import os
import stat
from typing import TYPE_CHECKING, NamedTuple

from michi import git
from michi.config import Config
from michi.repo import RepoPaths
from michi.workflow.journal import Journal
from michi.workflow.target import Target, inputs, resolve
from michi.workflow.tree import GitTaskTree

if TYPE_CHECKING:
    from pathlib import Path

    from michi.git import Repo


class Stamp(NamedTuple):
    """Which commit a read saw and everything that chose it (ADR 0008): while `is_current` holds, a read
    would see the same commit again, so an answer cached with the stamp is still the answer."""

    inputs: tuple[object, ...]  # what `resolve` reads (target.inputs)
    branch: str
    remote: str | None
    ref: str
    commit: str | None


class Snapshot(GitTaskTree):
    def __init__(
        self,
        repo: Repo,
        commit: str | None,
        branch: str,
        ref: str,
        synced_at: float | None,
        stamp: Stamp | None = None,
        remote: str | None = None,
    ) -> None:
        super().__init__(repo, commit)
        self.branch = branch
        self.ref = ref
        self.synced_at = synced_at  # when michi last talked to the remote; None = never (or no remote)
        self.stamp = stamp  # None when the read cannot be vouched for by file reads (target.inputs)
        self.remote = remote  # None: the repository has no such remote


def marker_time(state_dir: Path, name: str) -> float | None:
    """When the state marker `name` (`synced`, `contended`) was last touched: its own time, by one lstat.
    Anything but a regular file there (a link put in its place) is no marker: michi never reads a
    foreign file's time through a link in its state folder."""
    try:
        info = os.lstat(state_dir / name)
    except (FileNotFoundError, NotADirectoryError):
        return None
    return info.st_mtime if stat.S_ISREG(info.st_mode) else None


def touch_marker(state_dir: Path, name: str) -> None:
    """Set the state marker `name` to now: an lstat and a utime on the usual path. A link (or FIFO) there
    is replaced by a file, never written through: `Path.touch` set the time of a user's file the link
    named, or made the file a dangling link named, wherever that was. A folder there is a damaged marker
    too: left in place, it read as "never synced", and every read fetched (`read_max_age`)."""
    marker = state_dir / name
    try:
        mode = os.lstat(marker).st_mode
        if stat.S_ISREG(mode):
            os.utime(marker, follow_symlinks=False)
            return
        if stat.S_ISDIR(mode):
            _set_aside(marker)
        else:
            os.unlink(marker)
    except FileNotFoundError:
        state_dir.mkdir(parents=True, exist_ok=True)
    except OSError:  # one michi cannot remove (a folder it may not write): no marker, as before
        return
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    with contextlib.suppress(FileExistsError):  # another michi made it just now (or a folder is there)
        os.close(os.open(marker, flags, 0o644))


def _set_aside(folder: Path) -> None:
    """A folder where a marker belongs: removed when empty, else moved beside it under a name of its own
    (`synced.damaged-<pid>`), never deleted with what it holds."""
    try:
        os.rmdir(folder)
    except OSError:
        os.rename(folder, folder.with_name(f"{folder.name}.damaged-{os.getpid()}"))


def synced_at(paths: RepoPaths, remote: str | None) -> float | None:
    return marker_time(paths.state_dir, "synced") if remote else None


def _journal_pending(paths: RepoPaths) -> bool:
    return Journal(paths.state_dir).path.exists()  # written only with entries; cleared when empty


def read_snapshot(paths: RepoPaths, config: Config, *, fetch: bool = False) -> Snapshot:
    seen = inputs(paths, config)  # before resolving: a change in between makes the stamp miss, not lie
    repo = git.open_repo(paths.worktree)
    repo.network_timeout = config.remote_timeout or None
    repo.prestart()  # its objects are read next: the cat-file starts while this process goes on
    target = resolve(repo, config)
    if target.remote_ref and fetch:
        git.fetch_branch(repo, target.remote or "", target.branch)
        touch_marker(paths.state_dir, "synced")
    # Offline work not yet pushed lives only on the local branch; otherwise the remote-tracking branch
    # is the truth as last synced (the local branch may hold the user's own unrelated commits).
    ref = target.remote_ref
    journal = Journal(paths.state_dir)  # damaged, it may have named offline work: read the local branch
    if ref is None or journal.load(keep_damaged=True) or journal.damaged or git.ref_oid(repo, ref) is None:
        ref = target.local_ref
    commit = git.ref_oid(repo, ref)
    stamp = None if seen is None else Stamp(seen, target.branch, target.remote, ref, commit)
    return Snapshot(repo, commit, target.branch, ref, synced_at(paths, target.remote), stamp, target.remote)


def is_current(paths: RepoPaths, config: Config, stamp: Stamp) -> bool:
    """Would `read_snapshot` read `stamp.commit` now? Decided by file reads alone: no git process, no
    GitPython (ADR 0008). False whenever in doubt; the caller then takes the full read."""
    if _journal_pending(paths) or inputs(paths, config) != stamp.inputs:
        return False
    target = Target(stamp.branch, stamp.remote, offline=False)
    try:
        ref = target.remote_ref
        if ref is None or git.read_ref(paths.common_dir, ref) is None:
            ref = target.local_ref
        return ref == stamp.ref and git.read_ref(paths.common_dir, ref) == stamp.commit
    except (OSError, ValueError):
        return False
