"""What a command leaves behind that its caller need not wait for, removed by a detached `rm` (ADR 0015).

A staged move's folder (`.git/michi/stage/`) holds the index file the move replaced: at 50,000 tasks,
6 MB whose freeing costs ~3 ms of the kernel's time after the lock is let go, though nothing the command
answers depends on it. michi's own processes (`michi` run from a shell or by an agent, a served
command's worker, `michi mcp`: `detach`) hand such a folder to an `rm -rf` started in a session of its
own, its standard streams on /dev/null and no other descriptor of michi's (a caller reading michi's
output, or any pipe it handed michi, to its end does not wait for it), and not waited for, as git
detaches its `gc --auto`; a long-lived one collects each `rm` once it ended. A program calling michi in
its own process (the tests) removes the folder itself at once, as does a process that cannot start
`rm`. An `rm` killed half-way leaves a folder whose process is gone: the next changing command removes
it (`staged.clear_dead`).

Only the standard library's `os`: imported by michi's entry point before the command runs.
"""

import os

_detached = False
_started: list[int] = []  # rm processes not yet reaped (a long-lived process reaps them as it goes)


def detach() -> None:
    """From now on, leftovers are removed detached: this is michi's own process, not a program's that
    may look for them gone once michi returned."""
    global _detached
    _detached = True


def remove(path: str) -> bool:
    """Start removing `path` (a folder of michi's own) detached; False when the caller is to remove it
    itself: this process does not end with its command, or `rm` could not be started."""
    if not _detached:
        return False
    _reap()
    try:
        quiet = [(os.POSIX_SPAWN_OPEN, fd, os.devnull, os.O_RDWR, 0) for fd in (0, 1, 2)]
        actions = quiet + _closed_above_2()
        pid = os.posix_spawnp("rm", ["rm", "-rf", "--", path], {}, file_actions=actions, setsid=True)
    except (OSError, AttributeError, NotImplementedError):  # no `rm` on PATH, no process to spare, no
        return False  # posix_spawn (or no setsid for it) here: removed here, as without
    _started.append(pid)
    return True


def _closed_above_2() -> list[tuple[int, int]]:
    """Close actions for every descriptor above 2 that the `rm` would inherit: one its caller handed michi
    (a pipe it reads to its end, as for michi's output) would otherwise stay open until the `rm` ended.
    `posix_spawn` has no close-from before Python 3.13, so the inheritable ones are listed (Linux's
    /proc/self/fd: ~7 us); where they cannot be, none is closed."""
    closefrom = getattr(os, "POSIX_SPAWN_CLOSEFROM", None)
    if closefrom is not None:
        return [(closefrom, 3)]
    try:
        listed = os.listdir("/proc/self/fd")
    except OSError:
        return []
    actions = []
    for name in listed:
        fd = int(name)
        try:
            if fd > 2 and os.get_inheritable(fd):
                actions.append((os.POSIX_SPAWN_CLOSE, fd))
        except OSError:  # closed since it was listed (the listing's own descriptor)
            continue
    return actions


def _reap() -> None:
    """Collect the `rm`s that ended, so that a long-lived process (`michi mcp`) keeps no zombies."""
    for pid in list(_started):
        try:
            done, _status = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:  # reaped by someone else
            done = pid
        if done == pid:
            _started.remove(pid)
