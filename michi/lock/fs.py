"""File-system steps of the lock: the guard flock, creating and removing `.michi.lock`, the exclude entry.

Every change of the lock directory (create, take over, renew, release) happens under an exclusive
kernel `flock` on a guard file in the state dir that is never deleted (ADR 0003): a check-then-delete
without it lets two processes that judged the same stale lock both "take it over".
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import stat
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from michi.atomic import read_regular
from michi.errors import MichiError, storage_error
from michi.lock import procs
from michi.lock.errors import LockPathInvalid, LockTimeout
from michi.lock.record import OWNER_FILE

GUARD_FILE = "lock.guard"
EXCLUDE_LINES = {".michi.lock", "/.michi.lock", ".michi.lock/", "/.michi.lock/"}


def unwritable(path: Path, exc: OSError) -> MichiError:
    """Why the lock at `path` could not be made or removed: a full disk (or quota) is `storage_failed`
    (exit 5: free space and retry), as for every other write of michi's; anything else is the
    repository not writable (`lock_unwritable`, exit 2)."""
    if exc.errno in (errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC)):
        full = storage_error(exc)
        if full is not None:
            return full
    return LockPathInvalid(
        f"cannot create the repo lock at {path}: {exc.strerror or exc}",
        hint="michi needs a writable repository (check permissions, or a read-only mount)",
        code="lock_unwritable",
        path=str(path),
    )


def ensure_dir(path: Path) -> None:
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise unwritable(path, exc) from None


# How michi opens the lock's own files (guard, baton, waiters' tickets): never inherited by children (a
# child cannot keep our flocks alive), never following a link, and never blocking on the open itself (a
# FIFO put there would wait for a writer, for ever). A flock on the descriptor still blocks as asked.
OPEN_FLAGS = os.O_CLOEXEC | os.O_NONBLOCK | os.O_NOFOLLOW


def open_flock_file(path: Path) -> int:
    """An fd for flock (`OPEN_FLAGS`). Something else in its place (a folder, a FIFO, a device) is
    `lock_path_invalid` naming it: a folder there once made every locking command exit 1 with
    "unexpected error"."""
    try:
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | OPEN_FLAGS, 0o644)
        except OSError as exc:
            if exc.errno not in (errno.EACCES, errno.EROFS, errno.EPERM):
                raise
            fd = os.open(path, os.O_RDONLY | OPEN_FLAGS)  # flock works on read-only fds too
    except OSError as exc:
        raise _not_a_lock_file(path, exc.strerror or str(exc)) from None
    return _regular(fd, path)


def fence_at(path: Path) -> int:
    """The last fence kept in the guard file at `path`, read without making it: 0 when there is none yet.
    Something else in its place is `lock_path_invalid`, as for the commands that take it (a FIFO there
    once hung `michi lock status`, which waited for a writer)."""
    try:
        fd = os.open(path, os.O_RDONLY | OPEN_FLAGS)
    except FileNotFoundError:
        return 0
    except OSError as exc:
        raise _not_a_lock_file(path, exc.strerror or str(exc)) from None
    fd = _regular(fd, path)
    try:
        return read_fence(fd)
    finally:
        os.close(fd)


def _regular(fd: int, path: Path) -> int:
    """`fd`, if it is a regular file; else it is closed and the file named as no lock file."""
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise _not_a_lock_file(path, "not a regular file")
    return fd


def _not_a_lock_file(path: Path, why: str, what: str = "lock file") -> LockPathInvalid:
    return LockPathInvalid(
        f"{path} cannot be michi's {what}: {why}",
        hint=f"remove it (`rm -r '{path}'`); michi makes it again",
    )


def open_folder(path: Path, *, create: bool) -> int | None:
    """A descriptor of the lock's own folder at `path` (the waiters' queue), made first if `create`;
    None when it is missing and not to be made. A file, FIFO or symlink in its place is
    `lock_path_invalid` naming it: a file there once made every locking command and `lock status` exit
    1 (NotADirectoryError), and a symlink had waiters' tickets written wherever it pointed."""
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
    for _ in range(2):
        try:
            return os.open(path, flags)
        except FileNotFoundError:
            if not create:
                return None
            try:
                os.mkdir(path, 0o755)
            except FileExistsError:
                continue
            except FileNotFoundError:
                ensure_dir(path.parent)
                continue
            except OSError as exc:
                raise unwritable(path, exc) from None
        except OSError as exc:
            if os.path.islink(path):
                why = "a symlink"
            elif exc.errno == errno.ENOTDIR:
                why = "not a folder"
            else:
                why = exc.strerror or str(exc)
            raise _not_a_lock_file(path, why, "lock folder") from None
    raise _not_a_lock_file(path, "it keeps changing", "lock folder")


class GuardBusy(Exception):
    """The guard was not free within the time given: its holder may be stopped inside it (SIGSTOP, a
    debugger), which no lease can end; only its resumption or its death frees the guard."""


GUARD_STEP = 0.00005  # the first pause when the guard is busy: a live holder keeps it for microseconds
GUARD_STEP_CAP = 0.005
# How long whoever must change the lock and has no deadline of its own (the holder's release, renewal and
# group record; `michi lock release` and `renew`) waits for the guard: a live process keeps it for
# microseconds, one stopped inside it until it is resumed, which must hang nobody (ADR 0003).
GUARD_WAIT = 10.0


@contextlib.contextmanager
def guarded(fd: int, timeout: float) -> Iterator[None]:
    """Hold the guard flock for the block, taken within `timeout` seconds or not at all (`GuardBusy`):
    nobody waits for a holder that may never let go (one stopped inside the guard)."""
    _take_within(fd, timeout)
    try:
        yield
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)


def stuck(fd: int, waited: float, path: str) -> LockTimeout:
    """The error for a guard (open as `fd`) that was not let go within `waited` seconds, naming its holder."""
    pid, stopped = guard_holder(fd)
    return LockTimeout.guard_stuck(pid, stopped, waited, path)


def guard_holder(fd: int) -> tuple[int | None, bool]:
    """Who holds the guard open as `fd` (its PID from /proc/locks, Linux), and whether that process is
    stopped; (None, False) when that cannot be told."""
    try:
        st = os.fstat(fd)
        device = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino} "
        with open("/proc/locks") as locks:
            for line in locks:
                fields = line.split()  # a waiter blocked on it is listed after it, marked "->"
                if "FLOCK" in fields and "WRITE" in fields and "->" not in fields and device in line:
                    pid = int(fields[fields.index("WRITE") + 1])
                    return pid, procs.is_stopped(pid)
    except (OSError, ValueError, IndexError):
        pass
    return None, False


def _take_within(fd: int, timeout: float) -> None:
    deadline, step = time.monotonic() + timeout, GUARD_STEP
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            left = deadline - time.monotonic()
            if left <= 0:
                raise GuardBusy from None
            time.sleep(min(step, left))
            step = min(step * 2, GUARD_STEP_CAP)


FENCE_WIDTH = 20


def read_fence(fd: int) -> int:
    """The repository's last fence, kept in the guard file itself (never deleted, so never reset)."""
    return _counter(fd) or 0


def _counter(fd: int) -> int | None:
    """The guard's counter; None when it holds none (emptied, garbled, or a new file in its place)."""
    try:
        text = os.pread(fd, FENCE_WIDTH + 1, 0).strip()
        return int(text) if text.isdigit() else None
    except (OSError, ValueError):
        return None


def next_fence(fd: int, prior: int, logged: Callable[[], int]) -> int:
    """Under the guard: the next fence, above both the counter and the record being replaced (ADR 0003).
    One fixed-width pwrite: no extra file, no rename, so it adds nothing noticeable to a handoff. A guard
    whose counter was lost (emptied, garbled, removed as `lock_path_invalid` advised) would start again
    at 1: then the last fence the lock's event log names, `logged()`, counts too."""
    counter = _counter(fd)
    fence = max(counter if counter is not None else logged(), prior) + 1
    with contextlib.suppress(OSError):  # a read-only guard: the mkdir that follows fails with the reason
        os.pwrite(fd, f"{fence:0{FENCE_WIDTH}d}\n".encode(), 0)
    return fence


def check_lock_path(lock_dir: Path) -> bool:
    """True when the lock dir exists. A file or symlink in its place is refused, and never followed."""
    try:
        st = os.lstat(lock_dir)
    except FileNotFoundError:
        return False
    if stat.S_ISLNK(st.st_mode):
        kind = "a symlink"
    elif not stat.S_ISDIR(st.st_mode):
        kind = "a file, not a directory"
    else:
        return True
    raise LockPathInvalid(
        f"{lock_dir} is {kind}; michi will not follow or remove it",
        hint=f"if it is not yours to keep, remove it by hand (rm {lock_dir.name}) and retry",
        path=str(lock_dir),
    )


def make_lock_dir(lock_dir: Path) -> bool:
    """Atomic mkdir: True if we created it, False if it already exists."""
    try:
        os.mkdir(lock_dir, 0o755)
        return True
    except FileExistsError:
        check_lock_path(lock_dir)
        return False
    except OSError as exc:
        raise unwritable(lock_dir, exc) from None


def lock_mtime(lock_dir: Path) -> float:
    try:
        return os.lstat(lock_dir).st_mtime
    except FileNotFoundError:
        return 0.0


def remove_lock_dir(lock_dir: Path) -> None:
    """Remove the lock dir and whatever is in it, never following a symlink; gone already is fine.

    The usual case is one record and an rmdir. Anything else inside (a folder a command made, a FIFO or
    symlink put in the record's place) belongs to the lock too and goes with it, or nobody could ever
    take the lock again (ADR 0003). shutil.rmtree walks with directory fds and never follows links.
    """
    # The record goes first so a reader never sees a record in a dir that is half removed.
    with contextlib.suppress(OSError):
        os.unlink(lock_dir / OWNER_FILE)
    try:
        os.rmdir(lock_dir)
        return
    except FileNotFoundError:
        return
    except OSError as exc:
        if exc.errno not in (errno.ENOTEMPTY, errno.EEXIST):
            raise unwritable(lock_dir, exc) from None
    import shutil

    try:
        shutil.rmtree(lock_dir)
    except FileNotFoundError:
        pass
    except OSError as exc:
        raise unwritable(lock_dir, exc) from None


_excluded: set[Path] = set()


def exclude_lock(common_dir: Path) -> None:
    """Keep `.michi.lock` out of `git status`: add it to info/exclude once (read first, write rarely)."""
    exclude = common_dir / "info" / "exclude"
    if exclude in _excluded:
        return
    try:
        text = read_regular(exclude).decode("utf-8")
    except FileNotFoundError:
        text = ""
    except (OSError, UnicodeDecodeError):
        return
    if not EXCLUDE_LINES.intersection(line.strip() for line in text.splitlines()):
        try:
            exclude.parent.mkdir(parents=True, exist_ok=True)
            with exclude.open("a", encoding="utf-8") as fh:
                fh.write(("" if text == "" or text.endswith("\n") else "\n") + ".michi.lock\n")
        except OSError:
            return  # a read-only repository fails at mkdir with a clear error instead
    _excluded.add(exclude)
