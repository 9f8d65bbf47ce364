"""git's `index.lock` held from a checkout move's last check to its write of the index (ADR 0015).

git's own checkout checks the paths it moves and writes the index under one `index.lock`. A move made of
two git processes (the check, then `git restore`) would leave a moment between them in which a user's
`git add` lands and is then overwritten. Here the lock is taken first, as git takes it (`index.lock`
created exclusively): every git that writes the index meanwhile (`git add`, `commit`, `stash`) fails
and says so, as against git's own checkout. `git restore` writes a copy of the index (`GIT_INDEX_FILE`)
made under the lock, and the copy is renamed over the index before the lock is let go: a reader sees the
old index or the new one, a writer neither half.

A michi killed holding the lock leaves it; its folder (`.git/michi/stage/<pid>.held/`) names the lock
file (device, inode, ctime), and the next move removes that very file, never another git's
(`staged.clear_dead`). `IndexLock` is that lock and its name, for the staged move's install too; the
folder helpers are the stage folder's, shared with `michi.git.staged`. Not held (`take` gives None, and
the move runs as before) where the index is not `.git/index` (`GIT_INDEX_FILE`, a symlink), there is no
index yet, or `.git/michi/stage` is not michi's own folder.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from michi.git.core import lock_held

if TYPE_CHECKING:
    from michi.git.repo import Repo

WAIT = 1.0  # seconds another git may hold `index.lock` before the move says so and stops
# In a staging folder: the device, inode and ctime of the `index.lock` it holds (`marker`): an inode
# reused by another git's lock after the user removed a dead michi's has another ctime.
HELD = "index.lock.held"


def marker(lock: os.stat_result) -> str:
    """What names a held `index.lock` (never written to: its ctime stays its creation's)."""
    return f"{lock.st_dev} {lock.st_ino} {lock.st_ctime_ns}\n"


def names(lock: os.stat_result, written: str) -> bool:
    """Does the `marker` text `written` name the file `lock` (a marker of device and inode only, too)?"""
    fields = [int(v) for v in written.split()]
    return fields == [lock.st_dev, lock.st_ino, lock.st_ctime_ns][: len(fields)] and len(fields) >= 2


def folder(git_dir: Path) -> Path:
    """Where michi's moves keep their staging and their held locks' names."""
    return git_dir / "michi" / "stage"


def all_are(top: Path, paths: Iterable[str | Path], kind: Callable[[int], bool]) -> bool:
    """Is each of `paths` under `top` of `kind` (by `lstat`: a symlink is a symlink), or not there?"""
    for path in paths:
        try:
            if not kind(os.lstat(top / path).st_mode):
                return False
        except FileNotFoundError:
            continue
    return True


def prune(top: Path, folder: Path) -> None:
    """Remove `folder` and the folders above it that a deletion left empty, as git's checkout does."""
    while folder.parts:
        try:
            os.rmdir(top / folder)
        except OSError:
            return
        folder = folder.parent


def own_folder(git_dir: Path) -> bool:
    """Are `<git dir>/michi` and its `stage` real folders (or not there yet)? Through a symlink a staging
    would be written, and dead michis' folders cleared, in whatever folder it names: outside the
    repository, deleting a folder of the user's whose name starts with a number no process has."""
    return all_are(git_dir, ["michi", "michi/stage"], stat.S_ISDIR)


def copy_path(repo: Repo) -> Path | None:
    """The index copy a held move's `git restore` writes (known before the lock is taken, so the process
    can be started beside the push, `michi.git.prepared`); None when no lock can be held for this move."""
    if "GIT_INDEX_FILE" in os.environ or not own_folder(repo.paths.git_dir):
        return None
    return folder(repo.paths.git_dir) / f"{os.getpid()}.held" / "index"


class IndexLock:
    """git's `index.lock`, created by this process (`O_EXCL`, as git takes it) and named in `where/HELD`
    (device, inode, ctime), so that the next move removes it should this process be killed holding it
    (`staged.clear_dead`). Used by the held move and by the staged move's install alike."""

    def __init__(self, git_dir: Path, fd: int, where: Path) -> None:
        self.lock, self.fd, self.where = git_dir / "index.lock", fd, where

    @classmethod
    def take(cls, git_dir: Path, where: Path, wait: float = 0.0) -> IndexLock:
        """The lock, once no other git holds it, waiting up to `wait` seconds for one that does (a
        `git status`, a shell prompt's or an editor's, takes it for a few ms to refresh the index). Raises
        `FileExistsError` when another git still holds it then, `OSError` when it cannot be made or
        named."""
        lock = git_dir / "index.lock"
        deadline = time.monotonic() + wait
        while True:
            try:
                fd = os.open(lock, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)
                break
            except FileExistsError:
                if time.monotonic() >= deadline:
                    raise
                time.sleep(0.01)  # nothing to wait on: git removes the file, and tells nobody
        taken = cls(git_dir, fd, where)
        try:
            (where / HELD).write_text(marker(os.fstat(fd)))
        except BaseException:
            taken.release()
            raise
        return taken

    def release(self) -> None:
        """Let the lock go: only the very file taken (a lock someone removed and another git took is not
        ours). Its marker goes first: killed in between, the lock is left unnamed (the user removes it,
        as git says), never named after another git's lock took its inode."""
        with contextlib.suppress(OSError):
            os.unlink(self.where / HELD)
        try:
            mine = os.fstat(self.fd)
            found = os.lstat(self.lock)
            if (found.st_dev, found.st_ino) == (mine.st_dev, mine.st_ino):
                os.unlink(self.lock)
        except OSError:
            pass
        finally:
            os.close(self.fd)


class Held:
    """git's `index.lock`, held by this process, with a copy of the index made under it."""

    def __init__(self, git_dir: Path, lock: IndexLock, copy: Path) -> None:
        self.git_dir, self.index_lock, self.copy = git_dir, lock, copy

    def install(self) -> None:
        """The copy (as `git restore` wrote it) becomes the index; the lock is still held."""
        os.rename(self.copy, self.git_dir / "index")

    def release(self) -> None:
        """Let the lock go and remove the folder."""
        self.index_lock.release()
        with contextlib.suppress(FileNotFoundError):
            shutil.rmtree(self.copy.parent)


def take(repo: Repo) -> Held | None:
    """git's `index.lock`, taken (waiting up to `WAIT` seconds for another git's), and the index copied to
    `copy_path`; None when it cannot be held here (the move then runs without it). Raises `GitFailed`
    when another git still holds the lock: git's restore would have failed on it the same way."""
    copy = copy_path(repo)
    if copy is None:
        return None
    git_dir = repo.paths.git_dir
    try:
        if not stat.S_ISREG(os.lstat(git_dir / "index").st_mode):
            return None  # a symlink: git would lock where it points, not `index.lock`
        with contextlib.suppress(FileNotFoundError):
            shutil.rmtree(copy.parent)  # this process's earlier move's, if it could not remove it
        copy.parent.mkdir(parents=True)  # before the lock: its name is written at once once it is taken
        index_lock = IndexLock.take(git_dir, copy.parent, WAIT)
    except FileExistsError:
        busy = lock_held(f"fatal: Unable to create '{git_dir / 'index.lock'}': File exists.")
        assert busy is not None
        raise busy from None
    except OSError:  # no index yet (git's restore makes one), a folder in the way: the move runs as before
        return None
    held = Held(git_dir, index_lock, copy)
    try:
        # A copy, not a link: git replaces the index (never writes into it), so the file opened is whole.
        with open(git_dir / "index", "rb") as source, open(copy, "xb") as target:
            shutil.copyfileobj(source, target, 1 << 20)
    except OSError:  # no room: the move runs as before
        held.release()
        return None
    except BaseException:  # Ctrl-C, a termination: the lock is let go before the command stops
        held.release()
        raise
    return held
