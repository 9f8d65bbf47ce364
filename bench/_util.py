"""Shared helpers for benchmarks: timing, medians/p95, ratios, and an isolated git environment."""

from __future__ import annotations

import os
import statistics
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path


def isolated_git_env(home: Path) -> dict[str, str]:
    """Benchmarks, like tests, never read the user's git config or home directory."""
    # Users have bytecode: never time an interpreter told not to write it.
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("GIT_", "MICHI_")) and k != "PYTHONDONTWRITEBYTECODE"
    }
    (home / ".gitconfig").write_text("[init]\n\tdefaultBranch = main\n")
    env.update(
        HOME=str(home),
        GIT_CONFIG_GLOBAL=str(home / ".gitconfig"),
        GIT_CONFIG_NOSYSTEM="1",
        GIT_AUTHOR_NAME="Bench",
        GIT_AUTHOR_EMAIL="bench@example.invalid",
        GIT_COMMITTER_NAME="Bench",
        GIT_COMMITTER_EMAIL="bench@example.invalid",
    )
    return env


def tempdir(prefix: str) -> Path:
    return Path(tempfile.mkdtemp(prefix=f"michi-bench-{prefix}-"))


def sh(cmd: list[str] | str, cwd: Path, env: dict[str, str], check: bool = True) -> str:
    proc = subprocess.run(cmd, cwd=cwd, env=env, shell=isinstance(cmd, str), capture_output=True, text=True)
    if check and proc.returncode != 0:
        raise RuntimeError(f"{cmd} failed: {proc.stderr}")
    return proc.stdout


def timed(fn: Callable[[], object], repeat: int, warmup: int = 1) -> list[float]:
    for _ in range(warmup):
        fn()
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return samples


def p95(samples: list[float]) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def row(name: str, samples: list[float], baseline: list[float] | None = None) -> str:
    med = statistics.median(samples)
    text = f"{name:<48} median {med * 1000:9.3f} ms   p95 {p95(samples) * 1000:9.3f} ms   n={len(samples)}"
    if baseline:
        text += f"   ratio {med / statistics.median(baseline):6.2f}x"
    return text


def threads_elapsed(count: int, target: Callable[[int], None]) -> float:
    """Wall time for `count` threads running `target(0)` ... `target(count - 1)` at once."""
    threads = [threading.Thread(target=target, args=(a,)) for a in range(count)]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return time.perf_counter() - start


def wait_for(ready: Callable[[], bool], timeout: float) -> None:
    """Polls `ready` (every 10 ms) until it is true or `timeout` seconds passed."""
    deadline = time.monotonic() + timeout
    while not ready() and time.monotonic() < deadline:
        time.sleep(0.01)
