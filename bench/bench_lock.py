"""Lock benchmark: uncontended acquire+release, and release-to-acquire handoff between two processes,
for michi's repo lock beside a blocking fcntl.flock and filelock.FileLock with its defaults (ADR 0003).

Handoff: two processes play ping-pong; each holds the lock for HOLD seconds while the other is blocked
waiting, so a polling lock has backed off by the time the holder releases, as after real work.
`python bench/bench_lock.py` or `python bench/run.py lock`.
"""

from __future__ import annotations

import fcntl
import multiprocessing
import os
import subprocess
import sys
import time
from collections.abc import Callable
from multiprocessing.connection import Connection
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _util import isolated_git_env, row, sh, tempdir, timed

HOLD = 0.01
HANDOFFS = 150
UNCONTENDED = 2000

Factory = Callable[[Path], tuple[Callable[[], None], Callable[[], None]]]


def michi_lock(repo: Path) -> tuple[Callable[[], None], Callable[[], None]]:
    from michi.lock import RepoLock
    from michi.repo import find_repo

    lock = RepoLock(find_repo(repo), ttl=300, command="bench", agent=None)
    return (lambda: lock.acquire(60)), lock.release


def flock_lock(repo: Path) -> tuple[Callable[[], None], Callable[[], None]]:
    fd = os.open(repo / "bench.flock", os.O_RDWR | os.O_CREAT, 0o644)
    return (lambda: fcntl.flock(fd, fcntl.LOCK_EX)), (lambda: fcntl.flock(fd, fcntl.LOCK_UN))


def file_lock(repo: Path) -> tuple[Callable[[], None], Callable[[], None]]:
    from filelock import FileLock

    lock = FileLock(str(repo / "bench.filelock"))
    return (lambda: lock.acquire()), (lambda: lock.release())


LOCKS: dict[str, Factory] = {
    "fcntl.flock": flock_lock,
    "filelock.FileLock": file_lock,
    "michi RepoLock": michi_lock,
}


def _player(make: Factory, repo: Path, first: bool, rounds: int, peer: Connection, out: Connection) -> None:
    """Hold, release, then learn from the peer when it got the lock: one handoff sample per round."""
    acquire, release = make(repo)
    samples = []
    if not first:
        peer.recv()  # the first player holds the lock before we start waiting for it
    for _ in range(rounds):
        acquire()
        peer.send(time.monotonic_ns())  # CLOCK_MONOTONIC: one clock for both processes
        time.sleep(HOLD)
        released = time.monotonic_ns()
        release()
        samples.append((peer.recv() - released) / 1e9)
    if first:  # the peer's last round waits for one more acquisition
        acquire()
        peer.send(time.monotonic_ns())
        release()
    out.send(samples)


def handoff(make: Factory, repo: Path, rounds: int) -> list[float]:
    ctx = multiprocessing.get_context("fork")
    a_peer, b_peer = ctx.Pipe()
    results, out = ctx.Pipe(duplex=False)
    players = [
        ctx.Process(target=_player, args=(make, repo, first, rounds, peer, out))
        for first, peer in ((True, a_peer), (False, b_peer))
    ]
    for player in players:
        player.start()
    samples = results.recv() + results.recv()
    for player in players:
        player.join()
    return samples


def main() -> None:
    home = tempdir("lock-home")
    repo = tempdir("lock") / "repo"
    sh(["git", "init", "-q", str(repo)], cwd=repo.parent, env=isolated_git_env(home))
    print(f"uncontended acquire+release ({UNCONTENDED} times)")
    base: list[float] | None = None
    for name, make in LOCKS.items():
        acquire, release = make(repo)
        samples = timed(lambda a=acquire, r=release: (a(), r()), UNCONTENDED, warmup=20)  # type: ignore[misc]
        print("  " + row(name, samples, base))
        base = base or samples
    print(f"release-to-acquire handoff, two processes, {HOLD * 1000:.0f} ms holds ({HANDOFFS} handoffs)")
    base = None
    for name, make in LOCKS.items():
        samples = handoff(make, repo, HANDOFFS // 2)
        print("  " + row(name, samples, base))
        base = base or samples
    subprocess.run(["rm", "-rf", str(repo.parent), str(home)], check=False)


if __name__ == "__main__":
    main()
