"""One michi transaction vs the raw shell sequence doing the same job on a local bare remote (ADR 0004).

raw: mkdir lock; git pull --rebase; write file; git add; git commit; git push; rmdir lock.
michi: a fresh Python process running one transaction (lock, apply, commit, push, local update).
Also: how long michi holds the lock vs the whole command, and Python's own start-up as a floor.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

from _startup import bare_with_clone
from _util import isolated_git_env, row, sh, tempdir

N = 20
RAW = """set -e
mkdir .raw.lock
git pull -q --rebase
printf '{"description": "%s"}\\n' "$1" > ".tasks/$1.json"
git add ".tasks/$1.json"
git commit -q -m "raw: add $1"
git push -q
rmdir .raw.lock
"""


def _setup(env: dict[str, str]) -> tuple[Path, Path, Path, Path]:
    """Each side has its own bare remote, so neither sees the other's pushes (like for like); a third
    clone of michi's remote moves it on demand, for the case where another machine pushed meanwhile."""
    root = tempdir("txn")
    raw, michi, other = bare_with_clone(root, "raw", env), bare_with_clone(root, "michi", env), root / "other"
    sh(["git", "clone", "-q", str(root / "michi.git"), str(other)], root, env)
    return root, raw, michi, other


def main() -> None:
    env = isolated_git_env(tempdir("home"))
    root, raw, michi, other = _setup(env)
    here = Path(__file__).resolve().parent
    counter = iter(range(10**6))

    def run_raw() -> None:
        sh(["bash", "-c", RAW, "raw", f"r{next(counter)}"], raw, env)

    timings: list[dict[str, float]] = []

    def run_michi() -> None:
        out = sh([sys.executable, str(here / "_txn_driver.py"), str(michi), f"m{next(counter)}"], michi, env)
        timings.append(json.loads(out))

    def run_python() -> None:
        subprocess.run([sys.executable, "-c", "pass"], check=True)

    samples = {"raw": [], "michi": [], "python": []}  # type: dict[str, list[float]]
    fns = {"raw": run_raw, "michi": run_michi, "python": run_python}
    for fn in fns.values():
        fn()  # warm-up
    timings.clear()
    for _ in range(N):  # interleaved, so drift in machine load hits both sides alike
        for name, fn in fns.items():
            start = time.perf_counter()
            fn()
            samples[name].append(time.perf_counter() - start)
    print(row("raw shell sequence (mkdir, pull, add, commit, push)", samples["raw"]))
    print(row("michi transaction (fresh process)", samples["michi"], samples["raw"]))
    print(row("python -c pass (interpreter start-up floor)", samples["python"], samples["raw"]))
    hold = [t["lock_hold"] for t in timings]
    total = [t["total"] for t in timings]
    print(row("michi lock held (inside the process)", hold, samples["raw"]))
    print(row("michi in-process total (after imports)", total, samples["raw"]))
    print(
        "lock hold / whole michi command: "
        f"{statistics.median(hold) / statistics.median(samples['michi']):.2f}"
    )
    moved: list[float] = []
    timings.clear()
    for _ in range(N // 2):  # another clone pushed since michi last synced: its optimistic push is rejected
        sh(["bash", "-c", RAW, "raw", f"o{next(counter)}"], other, env)
        start = time.perf_counter()
        run_michi()
        moved.append(time.perf_counter() - start)
    print(row("michi transaction, remote moved meanwhile", moved, samples["raw"]))
    print(row("  its lock hold (rejected push, fetch, re-apply, push)", [t["lock_hold"] for t in timings]))
    print(f"(workdir {root.name}: removed by the OS temp cleaner)")


if __name__ == "__main__":
    main()
