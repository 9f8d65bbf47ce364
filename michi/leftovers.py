"""What a command leaves behind that its caller need not wait for, removed by a detached `rm` (ADR 0015).

A staged move's folder (`.git/michi/stage/`) holds the index file the move replaced: at 50,000 tasks,
6 MB whose freeing costs ~3 ms of the kernel's time after the lock is let go, though nothing the command
answers depends on it. michi's own processes (`michi` run from a shell or by an agent, a served
command's worker, `michi mcp`: `detach`) hand such a folder to an `rm -rf` started in a session of its
own, its standard streams on /dev/null (a caller reading michi's output to its end does not wait for
it), and not waited for, as git detaches its `gc --auto`; a long-lived one collects each `rm` once it
ended. A program calling michi in its own process (the tests) removes the folder itself at once, as
does a process that cannot start `rm`. An `rm` killed half-way leaves a folder whose process is gone:
the next changing command removes it (`staged.clear_dead`).

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
        pid = os.posix_spawnp("rm", ["rm", "-rf", "--", path], {}, file_actions=quiet, setsid=True)
    except (OSError, AttributeError, NotImplementedError):  # no `rm` on PATH, no process to spare, no
        return False  # posix_spawn (or no setsid for it) here: removed here, as without
    _started.append(pid)
    return True


def _reap() -> None:
    """Collect the `rm`s that ended, so that a long-lived process (`michi mcp`) keeps no zombies."""
    for pid in list(_started):
        try:
            done, _status = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:  # reaped by someone else
            done = pid
        if done == pid:
            _started.remove(pid)
