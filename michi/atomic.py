"""Write a file atomically: a temp file in the same folder, then `os.replace` (house style 7).

Readers see the old content or the new, never half a file, even if the writer is SIGKILLed. Used by the
lock's owner record, the journal, the task caches and the installed hook.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Sequence
from pathlib import Path

# As tempfile.mkstemp opens its files, without importing tempfile (random, shutil: ~8 ms per process).
_FLAGS = (
    os.O_WRONLY
    | os.O_CREAT
    | os.O_EXCL
    | getattr(os, "O_NOFOLLOW", 0)
    | getattr(os, "O_CLOEXEC", 0)
    | getattr(os, "O_BINARY", 0)
)


def _temp_file(path: Path) -> tuple[int, str]:
    """A new file `.NAME.RANDOM.tmp` beside `path`, readable by its owner only, opened for writing."""
    for _ in range(100):
        tmp = os.path.join(path.parent, f".{path.name}.{os.urandom(6).hex()}.tmp")
        try:
            return os.open(tmp, _FLAGS, 0o600), tmp
        except FileExistsError:
            continue
    raise FileExistsError(f"no free temporary name beside {path}")


def write_atomic(path: Path, data: bytes, *, mode: int = 0o644) -> None:
    _write(path, data, mode, free_name=False)


def write_cache(path: Path, data: bytes | Sequence[bytes], *, mode: int = 0o644) -> None:
    """`write_atomic` for a cache, a file michi can always make again (it checks what it reads): the old
    file is removed before the new one is renamed into its place, not renamed over. On ext4 a rename
    over an existing file makes the kernel start writing the new file's data out at once
    (`auto_da_alloc`, a guard against empty files after a power loss), ~0.5 ms on the command's path;
    a rename to a free name does not (ADR 0016). In between, a reader finds no cache and builds its own
    answer, as on a first run; a writer killed there leaves no cache. Never for the journal or the
    lock's record, whose absence means something."""
    _write(path, data, mode, free_name=True)


def _write(path: Path, data: bytes | Sequence[bytes], mode: int, *, free_name: bool) -> None:
    """`data`, or its pieces one after the other (not joined first: a cache is up to 28 MB)."""
    fd, tmp = _temp_file(path)
    try:
        with os.fdopen(fd, "wb") as out:
            for piece in (data,) if isinstance(data, bytes) else data:
                out.write(piece)
        os.chmod(tmp, mode)
        if free_name:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)
        os.replace(tmp, path)  # (a cache: over a file another writer put there meanwhile, if any)
    except BaseException as exc:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        if isinstance(exc, OSError) and exc.filename is None:  # a write on the fd names no file: name it
            raise OSError(exc.errno, exc.strerror, str(path)) from exc
        raise


_READ_FLAGS = (
    os.O_RDONLY
    | getattr(os, "O_NOFOLLOW", 0)
    | getattr(os, "O_NONBLOCK", 0)
    | getattr(os, "O_CLOEXEC", 0)
    | getattr(os, "O_NOCTTY", 0)
    | getattr(os, "O_BINARY", 0)
)


class NotARegularFile(OSError):
    """Something other than a regular file sits where michi keeps one of its files."""


def open_regular(path: Path) -> tuple[int, os.stat_result]:
    """A descriptor of the regular file at `path` and its stat, opened as `read_regular` says; the
    caller closes it."""
    try:
        fd = os.open(path, _READ_FLAGS)
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise NotARegularFile(f"{path} cannot be opened as a file ({exc.strerror or exc})") from None
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise NotARegularFile(f"{path} is not a regular file")
    return fd, st


# No file of michi's own comes near this (the largest, a list cache, is ~28 MB at 50,000 tasks): one that
# does is not michi's, and is never read (a 512 MiB journal once took 1 GB of memory, or a MemoryError).
MAX_STATE_BYTES = 256 << 20


def read_regular(path: Path) -> bytes:
    """The bytes of the regular file at `path` (FileNotFoundError when there is none). It is opened
    without following a symlink and without blocking, and read only to the size it had when opened: a
    FIFO, a device such as /dev/zero or a folder placed there raises OSError, never hangs or fills memory;
    so does a file over MAX_STATE_BYTES."""
    fd, st = open_regular(path)
    try:
        if st.st_size > MAX_STATE_BYTES:
            raise OSError(errno.EFBIG, f"{path}: larger than any file of michi's ({st.st_size:,} bytes)")
        chunks, left = [], st.st_size
        while left > 0:
            chunk = os.read(fd, left)
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)
