"""Git processes started while michi waits for its turn run at a lower CPU priority (ADR 0015).

With eight clones of one remote on two cores, a clone's lock holder (its round: apply, push, checkout
move) competed for the CPU with the other clones' work done without their locks: fetching the remote's
new tip into michi's ref and looking at the turn ref (each a git process and, at a local remote, its
upload-pack). That waiting work is worth less than the holder's: `git` started inside `yielding()` runs
under `nice -n 10` (its children, the remote's side of a local transport, inherit it), so a core goes to
the holder first. Only one-shot processes: a persistent `cat-file` started meanwhile would keep the low
priority under the lock. Without `nice` on PATH (not POSIX), git runs as it always did.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextvars import ContextVar

NICENESS = 10  # weight 110 against 1024 at 0: the holder gets ~90% of a core they both want

_yielding: ContextVar[bool] = ContextVar("michi_git_yielding", default=False)
_nice: list[str | None] = []  # `nice`'s path, looked up once


@contextlib.contextmanager
def yielding(active: bool = True) -> Iterator[None]:
    """Within it (and `active`), the git processes this thread starts yield the CPU to other work."""
    token = _yielding.set(active)
    try:
        yield
    finally:
        _yielding.reset(token)


def argv(args: list[str]) -> list[str]:
    """`git <args>`, under `nice` when started inside `yielding()`."""
    if not _yielding.get():
        return ["git", *args]
    if not _nice:
        import shutil  # only under contention (ADR 0010: lean start-up)

        _nice.append(shutil.which("nice"))
    return ["git", *args] if _nice[0] is None else [_nice[0], "-n", str(NICENESS), "git", *args]
