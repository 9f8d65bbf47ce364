"""git processes started ahead of the step that needs them, their input still to come (ADR 0016).

After the push, moving the checkout costs two git processes one after the other: `restore` (index and
work tree), then `update-ref` (the branch), each paying git's start-up first. Both can read what they
are to do from stdin (`--pathspec-from-file=-`, `--stdin`), so they are started beside the push and wait
there; once the push has landed and the move is known to be safe, each is handed its whole input in one
write and only does its work. Waiting, neither has read the index nor locked anything: `restore` reads
its paths before it reads the index, and `update-ref --stdin` locks the ref when its input ends. A
process never fed (the push was refused, the move refused, michi was killed) sees its input end empty and
changes nothing: `restore` with no path refuses, `update-ref` with no command does nothing.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import select
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from michi.git.repo import Repo

# One write of at most this many bytes to a pipe is atomic (POSIX PIPE_BUF): a michi killed while
# feeding leaves the process with all of its input or none, never a part of a move.
ATOMIC = select.PIPE_BUF
USAGE = 129  # git's exit status when it does not know an option: it stopped before doing anything


class Prepared:
    """One git process started now, given its input later (`feed`) or never (`drop`)."""

    def __init__(self, repo: Repo, args: list[str], env: Mapping[str, str] | None = None) -> None:
        self.proc = repo.start(args, env=env, fed=True)

    def feed(self, data: bytes) -> tuple[int, bytes, bytes] | None:
        """git's (status, stdout, stderr) with `data` as its whole input; None when this process cannot
        take it (it ended, or `data` is too long for one atomic write) or refused its options (a git
        older than them): nothing was done, run the command afresh."""
        stdin = self.proc.stdin
        assert stdin is not None
        if len(data) > ATOMIC or self.proc.poll() is not None:
            self.drop()
            return None
        try:
            written = os.write(stdin.fileno(), data)
        except OSError:  # it ended meanwhile: it read nothing
            self.drop()
            return None
        if written != len(data):  # cannot happen below PIPE_BUF; never let it run on a part
            self.proc.kill()
            self.drop()
            return None
        out, err = self.proc.communicate()  # closes its input: git does the work now
        if self.proc.returncode == USAGE:  # it refused its options (a git without them): nothing done
            return None
        return self.proc.returncode, out, err

    def drop(self) -> None:
        """End the input unfed: the process changes nothing and exits, reaped once the lock is let go
        (`later`): waiting for its exit inside the lock gains nothing."""
        stdin, self.proc.stdin = self.proc.stdin, None
        if stdin is not None:
            with contextlib.suppress(OSError):
                stdin.close()
        later(self._reap)

    def _reap(self) -> None:
        with contextlib.suppress(OSError, ValueError):
            self.proc.communicate()


def take(repo: Repo, key: tuple[str, ...]) -> Prepared | None:
    """The process prepared under `key`, now the caller's to feed or drop."""
    found = repo.ahead.pop(key, None)
    return found if isinstance(found, Prepared) else None


@runtime_checkable
class Droppable(Protocol):
    """Work started ahead of the step that needs it (a `Prepared` process, a staged move): `drop` ends it
    unused, changing nothing."""

    def drop(self) -> None: ...


def keep(repo: Repo, key: tuple[str, ...], item: Droppable) -> None:
    """Keep `item` under `key` for the step that needs it; one of the same kind kept before (an earlier
    push round's) is dropped first."""
    for old in [k for k in repo.ahead if isinstance(k, tuple) and k[:1] == key[:1]]:
        stale = repo.ahead.pop(old)
        if isinstance(stale, Droppable):
            stale.drop()
    repo.ahead[key] = item


def prepare(repo: Repo, key: tuple[str, ...], args: list[str], env: Mapping[str, str] | None = None) -> None:
    """Start `git <args>` under `key`; one of the same kind prepared before (an earlier push round) is
    dropped. No process to spare: the step simply starts its own later."""
    with contextlib.suppress(OSError):
        keep(repo, key, Prepared(repo, args, env))


def drop_prepared(repo: Repo) -> None:
    """Drop everything kept ahead and not taken (processes, a staged move)."""
    for key in [k for k, v in repo.ahead.items() if isinstance(v, Droppable)]:
        repo.ahead.pop(key).drop()


_LATER: list[Callable[[], None]] = []  # work that waits until the lock is let go (`tidy`)


def later(work: Callable[[], None]) -> None:
    """Do `work` once the lock is let go (`tidy`), or when this process exits, whichever comes first:
    what nobody waits for (removing a staging folder) need not lengthen the lock's hold."""
    if not _LATER:
        atexit.unregister(tidy)
        atexit.register(tidy)
    _LATER.append(work)


def tidy() -> None:
    """Do the work `later` put off (its failures are ignored: it only tidies up)."""
    while _LATER:
        with contextlib.suppress(OSError):
            _LATER.pop(0)()


def run(repo: Repo, key: tuple[str, ...], data: bytes) -> tuple[int, bytes, bytes] | None:
    """Feed the process prepared under `key`, if there is one that can take `data`; else None."""
    prepared = take(repo, key)
    return None if prepared is None else prepared.feed(data)
