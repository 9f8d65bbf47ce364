"""Remote lock benchmark (ADR 0009): uncontended acquire+release against a plain `git push` of one small
commit to the same remote (the cost floor of any lock kept on a git remote), and the release-to-acquire
handoff between two clones. Both over a local path and over `git daemon` on 127.0.0.1, samples of lock
and baseline interleaved so that a busy machine slows both alike.

`python bench/run.py remote_lock` (or `remote-lock`).
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from multiprocessing.connection import Connection
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _util import isolated_git_env, row, sh, tempdir

ROUNDS = 15  # uncontended acquire+release samples (and as many baseline pushes)
HANDOFFS = 10  # per direction
HOLD = 0.2  # seconds each player holds the lock: waiters have backed off a little, as after real work


def _lock(clone: Path) -> object:
    from michi.lock.remote import RemoteLock
    from michi.repo import find_repo

    return RemoteLock(find_repo(clone), remote="origin", ttl=60, command="bench", agent=None)


def _plain_push(clone: Path, env: dict[str, str]) -> None:
    """What any lock on a git remote must at least pay: one commit written, one push."""
    message = f"bench {time.time_ns()}"
    commit = sh(["git", "commit-tree", EMPTY_TREE, "-m", message], cwd=clone, env=env).strip()
    sh(["git", "push", "-q", "--force", "origin", f"{commit}:refs/heads/bench"], cwd=clone, env=env)


EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"


def uncontended(clone: Path, env: dict[str, str]) -> tuple[list[float], list[float]]:
    lock: object = _lock(clone)
    ours, plain = [], []
    for i in range(ROUNDS + 1):
        start = time.perf_counter()
        lock.acquire(10)  # type: ignore[attr-defined]
        lock.release()  # type: ignore[attr-defined]
        middle = time.perf_counter()
        _plain_push(clone, env)
        end = time.perf_counter()
        if i:  # the first round warms caches
            ours.append(middle - start)
            plain.append(end - middle)
    return ours, plain


def _player(clone: Path, first: bool, rounds: int, peer: Connection, out: Connection) -> None:
    lock: object = _lock(clone)
    samples = []
    if not first:
        peer.recv()
    for _ in range(rounds):
        lock.acquire(60)  # type: ignore[attr-defined]
        peer.send(time.monotonic_ns())  # CLOCK_MONOTONIC: one clock for both processes
        time.sleep(HOLD)
        lock.release()  # type: ignore[attr-defined]
        released = time.monotonic_ns()  # after our push returned: the remote has the free record
        samples.append((peer.recv() - released) / 1e9)
    if first:
        lock.acquire(60)  # type: ignore[attr-defined]
        peer.send(time.monotonic_ns())
        lock.release()  # type: ignore[attr-defined]
    out.send(samples)


def handoff(a: Path, b: Path) -> list[float]:
    ctx = multiprocessing.get_context("fork")
    a_peer, b_peer = ctx.Pipe()
    results, out = ctx.Pipe(duplex=False)
    players = [
        ctx.Process(target=_player, args=(clone, first, HANDOFFS, peer, out))
        for clone, first, peer in ((a, True, a_peer), (b, False, b_peer))
    ]
    for player in players:
        player.start()
    samples = results.recv() + results.recv()
    for player in players:
        player.join()
    return samples


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def daemon(root: Path, env: dict[str, str]) -> Iterator[str]:
    port = _free_port()
    args = ["--reuseaddr", "--export-all", "--enable=receive-pack", "--listen=127.0.0.1"]
    proc = subprocess.Popen(
        ["git", "daemon", *args, f"--port={port}", f"--base-path={root}", str(root)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"git://127.0.0.1:{port}/origin.git"
    try:
        while subprocess.run(["git", "ls-remote", url], env=env, capture_output=True).returncode:
            time.sleep(0.05)
        yield url
    finally:
        proc.terminate()
        proc.wait()


def main() -> None:
    home = tempdir("remote-lock-home")
    env = isolated_git_env(home)
    for name in [k for k in os.environ if k.startswith(("GIT_", "MICHI_"))]:
        del os.environ[name]
    os.environ.update(env)  # the lock runs git in this process's environment
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    root = tempdir("remote-lock")
    sh(["git", "init", "-q", "--bare", "origin.git"], cwd=root, env=env)
    with daemon(root, env) as git_url:
        for label, url in (("local path", str(root / "origin.git")), ("git daemon", git_url)):
            a, b = root / f"a-{label[:3]}", root / f"b-{label[:3]}"
            for clone in (a, b):
                sh(["git", "clone", "-q", url, str(clone)], cwd=root, env=env)
            ours, plain = uncontended(a, env)
            print(f"remote over {label}: uncontended, interleaved ({ROUNDS} each)")
            print("  " + row("plain `git push` of one commit", plain))
            print("  " + row("michi remote lock acquire+release", ours, plain))
            samples = handoff(a, b)
            print(f"  handoff between two clones, {HOLD * 1000:.0f} ms holds ({len(samples)} handoffs)")
            print("  " + row("release-to-acquire", samples, plain))
    subprocess.run(["rm", "-rf", str(root), str(home)], check=False)


if __name__ == "__main__":
    main()
