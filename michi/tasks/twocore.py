"""A cold read's work split over two cores (ADR 0015): part in a forked child, the rest here, at once.

`halves(items, work)` is `work(items)` (one result per item), done as `work(first part)` here and
`work(the rest)` in a child process forked for it, which sends its result back marshalled through a pipe.
The child has everything this process has (copy on write), so `work` runs there as it would here; its
result must be plain builtins. Anything wrong with the child (it fails, dies, or sends what does not
unmarshal) only costs time: this process then does the rest itself, so the answer, and any error it
raises, is as without a child.

`beside(there, here)` is the same for any two pieces of work (the child's answer is bytes the caller
checks); `beside_then` has the child send more after its answer, read only by whoever asks for it (a
child `later` starts, say); `later(work)` runs work whose answer nobody waits for (writing caches) in a
child, reaped at exit.

Not forked: small inputs (a fork costs more than it saves), one core, no `fork`, or other threads running
(a lock another thread held at the fork would stay held in the child, e.g. in the preloaded server). A
busy machine is no reason not to: the two processes cost ~10% more CPU in all, but get two shares of it
(a cold list at 50,000 tasks with the load average at 6 on two cores: 4.3-6.4 s instead of 5.2-8.4 s).
"""

from __future__ import annotations

import contextlib
import marshal
import os
import signal
import sys
from collections.abc import Callable, Sequence
from typing import TypeVar

T = TypeVar("T")
R = TypeVar("R")

FROM = 4000  # below this many items one process is quicker (fork, marshal and pipe cost ~10 ms)


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def usable(count: int, share: float = 0.5) -> bool:
    """Is a child worth forking for `count` items, and safe? MICHI_ONE_CORE set: never."""
    return count >= FROM and share < 1.0 and _safe()


def _safe() -> bool:
    threading = sys.modules.get("threading")  # not imported: no other thread (and `list` stays lean)
    if not hasattr(os, "fork") or os.environ.get("MICHI_ONE_CORE"):
        return False
    if threading is not None and threading.active_count() != 1:
        return False
    return _cores() > 1


_writers: list[int] = []  # children started by `later`, waited for by `wait` (at exit at the latest)
_held: dict[int, object] = {}  # the work handed to each until it is reaped (see `later`)


def later(work: Callable[[], object]) -> None:
    """`work()` (writing files) in a forked child while this process goes on, e.g. prints; waited for
    when this process exits, so a command never returns before its work is done. Here and now when no
    child can be forked or it would not run beside this process (see `usable`). A failure in the child
    is silent, as the best-effort cache writes it is for."""
    _reap(os.WNOHANG)  # those done by now (a `status --watch` lives long)
    pid = -1
    if _safe():
        with contextlib.suppress(OSError):
            pid = os.fork()
    if pid == 0:  # the child: never returns into the caller
        status = 1
        try:
            # Not the caller's output: whoever reads it sees its end when this process's parent ends.
            null = os.open(os.devnull, os.O_RDWR)
            for fd in (0, 1, 2):
                os.dup2(null, fd)
            work()
            status = 0
        finally:
            os._exit(status)
    if pid < 0:
        work()
        return
    _close_rests()  # the child has them now: whoever sends them waits on it, not on this process
    # What the work holds (a cold list's records) is kept until the child is reaped: freed now, it would
    # have every page it is on copied for this process while the child still shares them (~0.06 s at 50k).
    _held[pid] = work
    _later_reap(pid)


def _later_reap(pid: int) -> None:
    """A child this process waits for at exit (`at_exit`), at the latest."""
    if not _writers:
        import atexit

        atexit.register(at_exit)
    _writers.append(pid)


def wait(free: bool = True) -> None:
    """Wait for the children `later` started (output flushed first: whoever reads it need not wait), and
    free what they were handed unless `free` is false."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    _close_rests()  # never read: a child still sending them must not wait for this process
    _reap(0, free)


def holding() -> bool:
    """Does this process hold what it handed a child `later` started (freed when it is reaped)?"""
    return bool(_held)


def at_exit() -> None:
    """`wait`, as this process ends: what the children were handed is left to the end (a process that
    ends by `os._exit`, as michi's command line does, never frees it: a cold list's records and table
    took ~0.05 s to free at 50,000 tasks, ADR 0015)."""
    wait(free=False)


def _reap(flags: int, free: bool = True) -> None:
    for pid in list(_writers):
        try:
            done = os.waitpid(pid, flags)[0] == pid
        except ChildProcessError:
            done = True
        if done:
            _writers.remove(pid)
    if free:  # what children reaped now or before (`at_exit`) were handed
        for pid in [pid for pid in _held if pid not in _writers]:
            del _held[pid]


def halves(
    items: Sequence[T],
    work: Callable[[Sequence[T]], list[R]],
    *,
    meanwhile: Callable[[], object] | None = None,
    share: float = 0.5,
) -> list[R]:
    """`work(items)`, the items after the first `share` of them computed in a forked child meanwhile (see
    the module). `meanwhile` (if given) runs here first, once, while the child works: `share` less than a
    half leaves this side the time for it."""
    if not usable(len(items), share):
        if meanwhile is not None:
            meanwhile()
        return work(items)
    middle = int(len(items) * share)
    first, second = items[:middle], items[middle:]

    def here() -> list[R]:
        if meanwhile is not None:
            meanwhile()
        return work(first)

    mine, data = beside(lambda: marshal.dumps(work(second)), here)
    theirs: list[R] | None = None
    if data is not None:
        try:
            theirs = marshal.loads(data)
        except (ValueError, EOFError, TypeError):
            theirs = None
    if not isinstance(theirs, list) or len(theirs) != len(second):
        theirs = work(second)
    return mine + theirs


def beside(there: Callable[[], bytes], here: Callable[[], R]) -> tuple[R, bytes | None]:
    """(`here()`, `there()`), `there` run in a forked child meanwhile, its bytes sent back through a pipe;
    None instead of them when the child could not be forked, failed or died (the caller then does that
    part itself, so its answer and its errors are as without a child). An error here kills and reaps the
    child. The caller checks `usable` first."""
    mine, data, _ = beside_then(there, None, here)
    return mine, data


class Rest:
    """What a `beside_then` child sends after its answer (`then()`'s bytes): read when someone needs
    them, here or in a child forked since (`later` hands it over: this process closes its end then)."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._got: bytes | None = None
        _rests.append(self)

    def read(self) -> bytes | None:
        """The bytes, or None when the child failed or died before it sent them all (and is reaped at
        exit). Read once: again, the same answer."""
        if self._fd >= 0:
            self._got = _message(self._fd)
            self.close()
        return self._got

    def close(self) -> None:
        if self._fd >= 0:
            with contextlib.suppress(OSError):
                os.close(self._fd)
            self._fd = -1
        if self in _rests:
            _rests.remove(self)


_rests: list[Rest] = []  # not read yet: closed here when `later` hands them to its child, or at exit


def _close_rests() -> None:
    for rest in list(_rests):
        rest.close()


def beside_then(
    there: Callable[[], bytes], then: Callable[[], bytes] | None, here: Callable[[], R]
) -> tuple[R, bytes | None, Rest | None]:
    """`beside`, and the child then sends `then()` (run after `there()` in the same child), which this
    process reads only when asked (`Rest.read`), maybe not at all: the caller gets `there()`'s answer
    without waiting for it (ADR 0015: the records of a cold list's half, wanted only by the cache
    writer). The Rest is None when there was no child or it sent no whole first answer."""
    try:
        read_end, write_end = os.pipe()
    except OSError:
        return here(), None, None
    try:
        pid = os.fork()
    except OSError:
        os.close(read_end)
        os.close(write_end)
        return here(), None, None
    if pid == 0:  # the child: never returns into the caller
        status = 1
        try:
            os.close(read_end)
            with open(write_end, "wb") as out:
                for make in (there, then):
                    if make is not None:
                        sent = make()
                        out.write(len(sent).to_bytes(8, "big"))
                        out.write(sent)
                        out.flush()
            status = 0
        finally:
            os._exit(status)
    os.close(write_end)
    rest: Rest | None = None
    try:
        mine = here()
        data = _message(read_end)
        if then is not None and data is not None:
            rest = Rest(read_end)  # the child's to send on; reaped at exit (`wait`)
            read_end = -1
            _later_reap(pid)
            pid = 0
            status = 0
        else:
            os.close(read_end)
            read_end = -1
            _, status = os.waitpid(pid, 0)
            pid = 0
    finally:
        if read_end >= 0:
            os.close(read_end)
        if pid:  # this side failed: the child's result is not wanted
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
    return mine, data if status == 0 else None, rest


def _message(fd: int) -> bytes | None:
    """One message of a child (its length, then as many bytes) read from `fd`; None when it ends short."""
    head = _exactly(fd, 8)
    return None if head is None else _exactly(fd, int.from_bytes(head, "big"))


def _exactly(fd: int, size: int) -> bytes | None:
    buf = bytearray(size)
    view = memoryview(buf)
    got = 0
    while got < size:
        try:
            n = os.readv(fd, [view[got:]])
        except InterruptedError:  # pragma: no cover (retried by Python itself since PEP 475)
            continue
        if n == 0:
            return None
        got += n
    view.release()
    return bytes(buf)
