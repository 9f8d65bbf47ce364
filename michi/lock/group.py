"""A command run in its own process group, so that everything it starts can be stopped with it (ADR 0003).

`michi lock run` holds the lock for the whole group, not just its direct child: a shell's, make's or a
script's children are in the group too. The group is signalled on stop, on loss of the lock and after the
command exits (leftover background processes), and the lock is released only once none of it runs.
`PR_SET_PDEATHSIG` kills the direct child if michi dies, and a sentinel (`michi.lock.sentinel`) the rest of
the group at once, wherever the lock is kept; should that be killed too, the group is still recorded in the
lock (`pgid`), so no one takes a repo lock over while it runs (`record.judge`, "orphans").

At a terminal the group becomes the foreground group while it runs (as a shell does for a job), so an
editor started by `git commit` can read the terminal and Ctrl-C reaches the command; michi takes the
terminal back afterwards. Processes that leave the group themselves (`setsid`, GNU `timeout`, daemons)
are not covered.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

from michi.lock import procs
from michi.lock.sentinel import Sentinel
from michi.threads import HELD_BACK

if TYPE_CHECKING:
    import ctypes

PR_SET_PDEATHSIG = 1
STOP_GRACE = 5.0  # seconds the group gets to finish after SIGTERM before SIGKILL
POLL = 0.01


def _foreground_tty() -> int | None:
    """fd 0 when it is a terminal whose foreground group is ours (we may hand it on), else None."""
    try:
        return 0 if os.isatty(0) and os.tcgetpgrp(0) == os.getpgrp() else None
    except OSError:
        return None


def _take_terminal(fd: int, pgid: int) -> None:
    # From a background group tcsetpgrp raises SIGTTOU unless the signal is blocked (what shells do).
    old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTTOU})
    try:
        with contextlib.suppress(OSError):
            os.tcsetpgrp(fd, pgid)
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def _libc() -> ctypes.CDLL | None:
    if not sys.platform.startswith("linux"):
        return None
    import ctypes

    return ctypes.CDLL(None, use_errno=True)  # loaded before fork: the children make only syscalls


def _preexec(own_group: bool, tty: int | None, libc: ctypes.CDLL | None) -> Callable[[], None]:
    parent = os.getpid()

    def preexec() -> None:
        # michi holds these back while it starts the group (lock_run): the command gets them as usual.
        signal.pthread_sigmask(signal.SIG_UNBLOCK, HELD_BACK)
        if own_group:
            os.setpgid(0, 0)
            if tty is not None:
                _take_terminal(tty, os.getpid())
        if libc is not None:
            libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
            if os.getppid() != parent:  # michi died before prctl took effect
                os.kill(os.getpid(), signal.SIGKILL)

    return preexec


def _check_runnable(command: str, env: Mapping[str, str]) -> None:
    """Refuse, as exec would, a command that cannot run (the gate would only say so later)."""
    import errno
    import shutil

    if "/" in command:
        if not os.path.exists(command):
            raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), command)
        if os.path.isdir(command) or not os.access(command, os.X_OK):
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), command)
    elif shutil.which(command, path=env.get("PATH", os.defpath)) is None:
        path = env.get("PATH", os.defpath).split(os.pathsep)
        if command and any(os.path.isfile(os.path.join(folder or ".", command)) for folder in path):
            # found, but no exec bit: 126 as a shell exits (bash, POSIX), not 127 "not found"
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), command)
        raise FileNotFoundError(errno.ENOENT, "command not found", command)


class Group:
    """`Group.start`, record `pgid`/`ticks`, `go`; then `signal`, `wait`, `members`, `stop`, and `close`
    (gives the terminal back).

    `own_group=False` runs the command in michi's own group (a michi working under an inherited lock is
    itself part of its holder's group); signals then go to the direct child only.
    """

    def __init__(self, child: subprocess.Popen[bytes], own_group: bool, tty: int | None) -> None:
        self.child = child
        self.pgid = child.pid if own_group else None
        self.ticks = procs.start_ticks(child.pid) if own_group else None
        self._tty = tty
        self._go: int | None = None
        self._sentinel: Sentinel | None = None

    @classmethod
    def start(cls, argv: Sequence[str], env: Mapping[str, str], *, own_group: bool = True) -> Group:
        """Start `argv`, held at the gate until `go()`: the caller records the group in the lock first,
        so a michi killed at any moment never leaves group members the lock does not know of.

        Raises OSError when the command cannot be started. Call before starting threads: forking with
        a preexec function is only safe while the process is single-threaded."""
        _check_runnable(argv[0], env)
        tty = _foreground_tty() if own_group else None
        libc = _libc()
        gate, go = os.pipe()
        # The gate: a shell that waits for one line on the pipe, then execs the command in its place
        # (same PID, same group). EOF instead (michi died first) means: do not run at all.
        shim = f'read -r go <&{gate} || exit 125; exec {gate}<&-; exec "$@"'
        try:
            child = subprocess.Popen(
                ["/bin/sh", "-c", shim, "michi-lock-run", *argv],
                env=dict(env),
                preexec_fn=_preexec(own_group, tty, libc),
                pass_fds=(gate,),
            )
        except BaseException:
            os.close(go)
            raise
        finally:
            os.close(gate)
        group = cls(child, own_group, tty)
        group._go = go
        if group.pgid is not None and group.ticks is not None and procs.HAS_PROC:
            try:
                group._sentinel = Sentinel.start(group.pgid, group.ticks, libc)
            except BaseException:
                group.close()  # the gate sees EOF: the command never runs
                child.wait()
                raise
        return group

    def go(self) -> None:
        """Open the gate: the command starts now."""
        if self._go is not None:
            with contextlib.suppress(OSError):
                os.write(self._go, b"go\n")
            os.close(self._go)
            self._go = None

    def signal(self, sig: int) -> None:
        """Signal every process of the group (or the child). Safe from any thread; gone is fine."""
        if self.child.returncode is not None and not self.members():
            return  # all gone: the group's number may belong to someone else by now
        with contextlib.suppress(ProcessLookupError, PermissionError):
            if self.pgid is not None:
                os.killpg(self.pgid, sig)
            elif self.child.poll() is None:
                self.child.send_signal(sig)

    def wait(self) -> int:
        """The direct child's exit status (negative: killed by that signal).

        At a terminal, a stop of the command (Ctrl-Z, or an editor suspending itself) is passed on as a
        shell would see it: michi takes the terminal back and stops too, so the shell regains control;
        on `fg` it hands the terminal back and continues the command. Without that, the terminal would
        belong to a stopped group nobody can resume."""
        while self._tty is not None:
            info = os.waitid(os.P_PID, self.child.pid, os.WEXITED | os.WSTOPPED | os.WNOWAIT)
            if info is None or info.si_code != os.CLD_STOPPED:
                break
            os.waitid(os.P_PID, self.child.pid, os.WSTOPPED)  # consume the stop report
            self._suspend()
        return self.child.wait()

    def _suspend(self) -> None:
        assert self._tty is not None and self.pgid is not None
        _take_terminal(self._tty, os.getpgrp())
        os.killpg(os.getpgrp(), signal.SIGSTOP)  # as the command was: the shell sees its job stop
        # Resumed (`fg`): the shell gave the terminal to our group; hand it on and wake the command.
        _take_terminal(self._tty, self.pgid)
        self.signal(signal.SIGCONT)

    def members(self) -> list[int]:
        """Processes of the group that still run (the direct child included until it exits)."""
        if self.pgid is None:
            return [self.child.pid] if self.child.poll() is None else []
        self.child.poll()  # reap the child if it is done, so it does not count as a member
        return procs.group_members(self.pgid, self.ticks)

    def stop(self, grace: float = STOP_GRACE) -> list[int]:
        """End whatever of the group still runs: SIGTERM (and SIGCONT, for stopped ones), up to `grace`
        seconds to finish, then SIGKILL. Returns the PIDs that were still running when called."""
        running = self.members()
        if not running:
            return []
        self.signal(signal.SIGTERM)
        self.signal(signal.SIGCONT)
        if not self._gone_within(grace):
            self.signal(signal.SIGKILL)
            self._gone_within(grace)
        return running

    def _gone_within(self, seconds: float) -> bool:
        deadline = time.monotonic() + seconds
        while self.members():
            if time.monotonic() >= deadline:
                return False
            time.sleep(POLL)
        return True

    def close(self) -> None:
        """After `stop`: the sentinel stands down (or, should some of the group still run, ends it)."""
        if self._go is not None:  # never opened: the gate sees EOF and the command never runs
            os.close(self._go)
            self._go = None
        if self._sentinel is not None:
            self._sentinel.close(over=not self.members())
            self._sentinel = None
        if self._tty is not None:
            _take_terminal(self._tty, os.getpgrp())
            self._tty = None
