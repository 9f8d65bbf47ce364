"""Processes as the kernel reports them in `/proc/PID/stat`: identity, parent, process group (ADR 0003).

A process is identified by its PID *and* its start time in raw clock ticks since boot (field 22), read
with the boot id: both are fixed for the life of the process, so a wall-clock step (NTP, `date -s`, a
VM resume moving /proc/stat's btime) can never make a live holder look like a reused PID. psutil's
`create_time()` is btime + ticks, a wall-clock value, which is why it is not used for this.

Only `os` is imported: the pre-commit hook asks these questions on every commit with a lock present.
Without /proc (macOS) a process is judged only alive or gone, by `kill(pid, 0)`.
"""

from __future__ import annotations

import os

from michi.pids import exists
from michi.plain import Plain

PROC = "/proc"
HAS_PROC = os.path.isdir(f"{PROC}/self")
_GONE_STATES = ("Z", "X", "x")  # zombie or dead: killed but not yet reaped is gone for our purposes
_STOPPED_STATES = ("T", "t")  # stopped by a signal (SIGSTOP, Ctrl-Z) or at a tracer's stop (a debugger)


class Stat(Plain):
    __slots__ = ("pgrp", "pid", "ppid", "state", "ticks")

    def __init__(self, pid: int, state: str, ppid: int, pgrp: int, ticks: int) -> None:
        self.pid, self.state, self.ppid, self.pgrp = pid, state, ppid, pgrp
        self.ticks = ticks  # start time, clock ticks after boot

    @property
    def running(self) -> bool:
        return self.state not in _GONE_STATES

    @property
    def stopped(self) -> bool:
        return self.state in _STOPPED_STATES


def stat(pid: int) -> Stat | None:
    """The process's stat line, or None when there is no such process (or no /proc)."""
    try:
        with open(f"{PROC}/{pid}/stat", "rb") as fh:
            raw = fh.read()
    except OSError:
        return None
    # The command name (field 2) is in parentheses and may itself contain ") ": split at the last one.
    fields = raw[raw.rfind(b")") + 2 :].split()
    try:
        return Stat(pid, fields[0].decode(), int(fields[1]), int(fields[2]), int(fields[19]))
    except (IndexError, ValueError):
        return None


def is_stopped(pid: int) -> bool:
    """Whether `pid` is stopped (SIGSTOP, Ctrl-Z, a debugger): alive, but doing nothing until resumed.
    One read of /proc/PID/stat; False without /proc or such a process."""
    found = stat(pid) if pid > 0 else None
    return found is not None and found.stopped


def start_ticks(pid: int) -> int | None:
    """The live process's start ticks; None when it is gone. 0 where /proc is missing but it exists."""
    if pid <= 0:
        return None
    if not HAS_PROC:
        return 0 if exists(pid) else None
    found = stat(pid)
    return found.ticks if found is not None and found.running else None


def alive(pid: int, ticks: int | None) -> bool:
    """Is `pid` still the process that started at `ticks` (None: any process with that PID)?"""
    now = start_ticks(pid)
    return now is not None and (ticks is None or not HAS_PROC or now == ticks)


def group_members(pgid: int, since: int | None) -> list[int]:
    """Running processes of process group `pgid` that started at or after `since` (the group leader's
    start ticks: a genuine member is forked after its leader, so older ones belong to another group).

    The members of a *later* group that took the same number also started after `since`: a live leader
    whose start is not `since` means the number leads another group now, and a record without `since`
    cannot tell its group from any other. Both have no members here: a stale or hand-made lock record
    once had the next `lock run` SIGKILL an unrelated process group it named."""
    if pgid <= 1:
        return []
    try:
        os.killpg(pgid, 0)  # the fast answer for the usual case: nobody is left
    except ProcessLookupError:
        return []
    except PermissionError:
        pass
    if not HAS_PROC:
        return [pgid]
    leader = stat(pgid)
    if since is None or (leader is not None and leader.ticks != since):
        return []
    members = []
    for name in os.listdir(PROC):
        if name.isdigit():
            found = stat(int(name))
            if found and found.pgrp == pgid and found.running and (since is None or found.ticks >= since):
                members.append(found.pid)
    return members


def ancestors(pid: int, limit: int = 64) -> list[Stat]:
    """`pid` and its parents, nearest first, up to (not including) init."""
    chain: list[Stat] = []
    while pid > 1 and len(chain) < limit:
        found = stat(pid)
        if found is None:
            break
        chain.append(found)
        pid = found.ppid
    return chain


# The process this michi acts for, when it is not its parent: a served command's client (ADR 0016).
_caller: int | None = None


def act_for(pid: int) -> None:
    """Take `pid`'s place in the process tree: its ancestors are this command's callers."""
    global _caller
    _caller = pid


def is_descendant(of_pid: int, of_ticks: int | None) -> bool:
    """Whether the calling process descends from the process `of_pid` that started at `of_ticks`."""
    if not HAS_PROC:
        return False
    chain = ancestors(os.getppid() if _caller is None else _caller)
    return any(p.pid == of_pid and (of_ticks is None or p.ticks == of_ticks) for p in chain)


def _link(pid: int, name: str) -> str | None:
    try:
        return os.readlink(f"{PROC}/{pid}/{name}")
    except OSError:
        return None


def cmdline(pid: int) -> bytes | None:
    """The process's arguments, NUL-separated; None when it is gone (or there is no /proc)."""
    try:
        with open(f"{PROC}/{pid}/cmdline", "rb") as fh:
            return fh.read()
    except OSError:
        return None


# Programs that run a command as their child and wait for it: michi's parent may be one of them
# (`timeout 10 michi lock acquire`), but the script that called them is the holder.
WRAPPERS = frozenset(
    {"timeout", "time", "flock", "nice", "nohup", "env", "stdbuf", "ionice", "chrt", "taskset"}
    | {"uv", "uvx"}  # `uv run michi ...` waits for michi too
)


def _is_transient(proc: Stat, parent: int) -> bool:
    """A subshell (a fork of its parent: same program, same arguments), as `$(...)`, a pipeline, `( )`
    or `||` make, or a wrapper waiting for its command: neither outlives the script that made it."""
    args = cmdline(proc.pid)
    if args is None:
        return False
    argv0 = os.path.basename(args.split(b"\0", 1)[0].decode(errors="replace"))
    if argv0 in WRAPPERS:
        return True
    exe = _link(proc.pid, "exe")
    return exe is not None and exe == _link(parent, "exe") and args == cmdline(parent)


def script_holder(pid: int) -> int:
    """The process a script's lock belongs to: `pid` (michi's parent), or, past subshells and wrappers,
    the first ancestor that is neither. That is the script itself, however michi was called from it."""
    return script_chain(pid)[0]


def script_chain(pid: int) -> tuple[int, list[tuple[int, int]]]:
    """`script_holder(pid)`, and the subshells and wrappers passed on the way there as (PID, start ticks).

    A fork cannot tell `$(...)`, which ends at once, from `( ... ) &`, which may work on after the script
    exits: both are recorded with the script, and the lock is its while any of them runs (ADR 0003).
    Recording only the script had a background subshell's lock taken over once the script exited."""
    passed: list[tuple[int, int]] = []
    for proc in ancestors(pid):
        if proc.ppid <= 1 or not _is_transient(proc, proc.ppid):
            return proc.pid, passed
        passed.append((proc.pid, proc.ticks))
    return pid, []


def end_members(pgid: int, since: int | None, grace: float = 2.0) -> list[int]:
    """SIGKILL the running members of a dead holder's group (verified one by one, never `killpg` on a
    number alone) until, bounded, none runs. Returns the PIDs that were ended.

    Each round lists the group afresh: a member may fork between the listing and its SIGKILL (a shell's
    loop starting its next `sleep`), and the child is a member the first listing did not name."""
    import signal
    import time

    ended: list[int] = []
    deadline = time.monotonic() + grace
    while (running := group_members(pgid, since)) and time.monotonic() < deadline:
        for pid in running:
            if pid not in ended:
                ended.append(pid)
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                continue
        time.sleep(0.005)
    return ended
