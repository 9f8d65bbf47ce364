"""A sentinel that ends a `lock run` command's process group when michi dies, however it dies (ADR 0003).

`PR_SET_PDEATHSIG` kills only michi's direct child: a grandchild still in the group ran on after michi was
SIGKILLed. On this machine the next taker of the repo lock ends it ("orphans"), but a taker of the remote
lock on another machine cannot see it, and ran its command beside it (ADR 0009). So `Group.start` forks a
sentinel: a copy of michi (no exec, no import) in a session of its own, out of reach of the signals aimed
at michi's process group or terminal (`kill -9 -PGID`, `timeout -s KILL`, a hang-up), holding the read end
of a pipe whose only write end is michi's. End of file without the byte michi writes when the group is
over means michi is gone: the sentinel SIGKILLs whatever still runs in the group, each process verified
as a member started after the group's leader (`procs.end_members`: a reused group number is never
signalled), and exits. A stopped michi (SIGSTOP, Ctrl-Z, a debugger) keeps its end open: only death
counts, and the sentinel never outlives michi's end of the group.
"""

from __future__ import annotations

import contextlib
import gc
import os
import select
import signal
from typing import TYPE_CHECKING, NoReturn

from michi.lock import procs
from michi.threads import HELD_BACK

if TYPE_CHECKING:
    import ctypes

DONE = b"d"
NAME = b"michi-sentinel"  # its `comm`, as `ps -e` and /proc/PID/comm show it (15 bytes at most)
PR_SET_NAME = 15
REAP_WAIT = 1.0  # seconds michi waits for the sentinel to exit once told the group is over


class Sentinel:
    """`Sentinel.start(pgid, ticks)` right after the group is made; `close()` once it is over."""

    def __init__(self, pid: int, fd: int) -> None:
        self.pid = pid
        self._fd: int | None = fd

    @classmethod
    def start(cls, pgid: int, ticks: int, libc: ctypes.CDLL | None = None) -> Sentinel:
        """Fork the sentinel for group `pgid`, whose leader started at `ticks`. Call while the process is
        single-threaded (as `Group.start` is), so the fork copies no lock another thread holds.

        The pipe is close-on-exec, so no command michi runs inherits its write end; michi forks no other
        child that could outlive it with a copy. Raises OSError when it cannot fork."""
        read_end, write_end = os.pipe()
        try:
            pid = os.fork()
        except OSError:
            os.close(read_end)
            os.close(write_end)
            raise
        if pid == 0:
            _watch(read_end, pgid, ticks, libc)
        os.close(read_end)
        return cls(pid, write_end)

    def close(self, over: bool = True) -> None:
        """Let the sentinel go, and reap it: with `over`, the group is over and it exits at once;
        without, it ends what of the group still runs first, as if michi had died."""
        if self._fd is None:
            return
        if over:
            with contextlib.suppress(OSError):  # a sentinel killed by someone: nothing to tell
                os.write(self._fd, DONE)
        os.close(self._fd)
        self._fd = None
        _reap(self.pid)


def _watch(fd: int, pgid: int, ticks: int, libc: ctypes.CDLL | None) -> NoReturn:
    """The sentinel's life (in the forked child): never returns."""
    try:
        gc.disable()  # no finalizer of michi's objects may close an fd number this process reuses
        os.setsid()
        for sig in HELD_BACK:  # not michi's handlers (they raise into michi's code) nor its mask
            signal.signal(sig, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, HELD_BACK)
        null = os.open(os.devnull, os.O_RDWR)
        for std in (0, 1, 2):  # not michi's output: whoever reads it sees its end when michi's ends
            os.dup2(null, std)
        # Everything else michi had open goes: the write end of this very pipe (kept, it would hide
        # michi's death), the gate's, and the lock's flocks (the baton: waiters wake when michi lets go).
        for name in os.listdir(f"{procs.PROC}/self/fd"):  # the sentinel runs only where /proc is
            if int(name) > 2 and int(name) != fd:
                with contextlib.suppress(OSError):  # listdir's own, closed already
                    os.close(int(name))
        os.chdir("/")
        if libc is not None:
            libc.prctl(PR_SET_NAME, NAME, 0, 0, 0)
        if os.read(fd, 1) != DONE:  # end of file: michi died with the group still its
            procs.end_members(pgid, ticks)
    finally:
        os._exit(0)


def _reap(pid: int) -> None:
    """Wait (bounded: a sentinel someone stopped must not hold michi up) for the sentinel's exit."""
    with contextlib.suppress(OSError, AttributeError):  # no pidfd (Linux < 5.3): do not wait
        pidfd = os.pidfd_open(pid)
        try:
            select.select([pidfd], [], [], REAP_WAIT)
        finally:
            os.close(pidfd)
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)  # not exited in time: a zombie until michi exits, nothing worse
