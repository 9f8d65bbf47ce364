"""An earlier holder's `git push` that outlived it (ADR 0004).

`git push` runs in its own session so a terminal Ctrl-C cannot cut it in half; the price is that it also
outlives a SIGKILLed michi. Before the next holder decides what landed, that push must be over: the
journal names its pid and start time, and the next holder waits for it (bounded), then ends its process
group. Exactly-once does not depend on this (a landed transaction is recognised by its `Michi-Txn`
trailer whatever commit carries it, see `recovery`), but a push still in flight would make the answer
"not landed" provisional, and the outcome of the recovered command misleading.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time

from michi.host import hostname
from michi.workflow.journal import PushProcess

# Long enough for a slow pre-receive hook (CI checks on the server) to finish, short enough that a hung
# push does not hold every other michi command hostage.
ORPHAN_WAIT = 30.0
_KILL_GRACE = 2.0


def describe(pid: int) -> PushProcess | None:
    """The push process `pid` as the journal records it; None when it is already gone."""
    from michi.lock.record import boot_id, process_start

    start = process_start(pid)
    if start is None:
        return None
    return PushProcess(pid=pid, start=start, host=hostname(), boot_id=boot_id())


def _alive(push: PushProcess) -> bool:
    from michi.lock.record import boot_id, process_start

    if push.host != hostname() or (push.boot_id and push.boot_id != boot_id()):
        return False  # another machine's push cannot be waited for; after a reboot it is gone
    start = process_start(push.pid)
    return start is not None and abs(start - push.start) <= 0.05  # else the pid was reused


def _wait_gone(push: PushProcess, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    delay = 0.005
    while _alive(push):
        if time.monotonic() >= deadline:
            return False
        time.sleep(delay)
        delay = min(delay * 2, 0.1)
    return True


def _gated(push: PushProcess) -> bool:
    """Does the push's process still show the gate's arguments (`plain.run_ended(named=)`)? False where
    there is no /proc to tell: such a push is waited for as any other."""
    from michi.git.plain import GATE_NAME
    from michi.lock import procs

    args = (procs.cmdline(push.pid) or b"").split(b"\0")
    return len(args) > 3 and args[3] == GATE_NAME.encode()


def _stopped(push: PushProcess) -> bool:
    """Wait (bounded) until the process is stopped by the SIGSTOP just sent, or gone."""
    from michi.lock import procs

    deadline = time.monotonic() + _KILL_GRACE
    while time.monotonic() < deadline:
        found = procs.stat(push.pid)
        if found is None or not found.running or found.stopped:
            return True
        time.sleep(0.002)
    return False


def _never_started(push: PushProcess) -> bool:
    """Is the push still held at its gate: its holder named it, then stopped (a paused process whose
    lease ran out) before it let git start? Read once the process is stopped, so that the answer stays
    true: a signal is taken only between system calls, never half-way through `exec`, so a stopped
    process that still shows the gate never ran git, and the SIGKILL that follows ends it so. A process
    that started git meanwhile is let go on (SIGCONT), and waited for as any push."""
    if not _gated(push):
        return False
    try:
        os.killpg(push.pid, signal.SIGSTOP)
    except (ProcessLookupError, PermissionError):
        return False
    if _stopped(push) and _gated(push):
        return True
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(push.pid, signal.SIGCONT)
    return False


def _stop(push: PushProcess, first: signal.Signals = signal.SIGTERM) -> None:
    for sig in dict.fromkeys((first, signal.SIGKILL)):
        try:
            if os.getpgid(push.pid) == push.pid:  # its own session (git.push): end git and its helpers
                os.killpg(push.pid, sig)
            else:
                os.kill(push.pid, sig)
        except ProcessLookupError:
            break
        if _wait_gone(push, _KILL_GRACE):
            break


def settle(push: PushProcess | None, wait: float | None = None) -> str | None:
    """Make sure the push a dead holder started is over; a note for the user when it was not yet.
    `MICHI_ORPHAN_WAIT` (seconds) overrides the wait, e.g. 0 to stop such a push at once. A push still
    held at its gate never started: it is stopped at once, not waited for."""
    if push is None or not _alive(push):
        return None
    if _never_started(push):
        _stop(push, first=signal.SIGKILL)
        return f"the push of an interrupted michi (pid {push.pid}) had not started; it was ended, unrun"
    if wait is None:
        try:
            wait = float(os.environ.get("MICHI_ORPHAN_WAIT") or ORPHAN_WAIT)
        except ValueError:
            wait = ORPHAN_WAIT
    started = time.monotonic()
    if _wait_gone(push, wait):
        return f"waited {time.monotonic() - started:.1f}s for the push of an interrupted michi to finish"
    _stop(push)
    return (
        f"the push of an interrupted michi (pid {push.pid}) was still running after {wait:.0f}s and was "
        "stopped; what it landed was checked on the remote"
    )
