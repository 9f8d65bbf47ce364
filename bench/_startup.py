"""What the start-up benchmarks share: a prepared interpreter, the repositories, the raw git sequence,
and the import-time breakdown by top-level package."""

from __future__ import annotations

import compileall
import importlib.util
import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

from _util import sh

MICHI = [sys.executable, "-m", "michi"]
# The raw sequence an agent would script without michi. With `flock` the caller holds the lock, so the
# mkdir/rmdir pair is left out there (RAW_BODY).
RAW_BODY = """set -e
git pull -q --rebase
printf '{"description": "%s"}\\n' "$1" > ".tasks/$1.json"
git add ".tasks/$1.json"
git commit -q -m "raw: add $1"
git push -q
"""
RAW = "set -e\nmkdir .raw.lock\n" + RAW_BODY + "rmdir .raw.lock\n"


def prepared_env(env: dict[str, str]) -> dict[str, str]:
    """Users have bytecode: write it for michi and its dependencies now, and let the timed runs use it."""
    for name in ("michi", "typer", "rich", "psutil"):
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.submodule_search_locations:
            for folder in spec.submodule_search_locations:
                compileall.compile_dir(folder, quiet=1)
    env = {k: v for k, v in env.items() if k != "PYTHONDONTWRITEBYTECODE"}
    michi_root = str(Path(__file__).resolve().parent.parent)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (michi_root, env.get("PYTHONPATH")) if p)
    return env


def bare_with_clone(root: Path, name: str, env: dict[str, str]) -> Path:
    """A bare remote `name.git` with one commit holding `.tasks/`, and a clone of it at `root/name`."""
    bare, work = root / f"{name}.git", root / name
    sh(["git", "init", "-q", "--bare", "-b", "main", str(bare)], root, env)
    sh(["git", "clone", "-q", str(bare), str(work)], root, env)
    (work / ".tasks").mkdir()
    (work / ".tasks" / "seed.json").write_text("{}\n")
    sh("git add -A && git commit -qm seed && git push -q origin HEAD:main", work, env)
    return work


def michi_clone(root: Path, name: str, env: dict[str, str], tasks: int, picks: int = 0) -> Path:
    """A clone with `michi init` done, `tasks` open tasks in the root domain (ids 1..tasks) and `picks`
    more in the domain `pick/` (for `next --claim`, away from the ids other verbs use), cache warm."""
    bare, work = root / f"{name}.git", root / name
    sh(["git", "init", "-q", "--bare", "-b", "main", str(bare)], root, env)
    sh(["git", "clone", "-q", str(bare), str(work)], root, env)
    sh([*MICHI, "init"], work, env)
    (work / "pick").mkdir()
    script = (
        "from michi.cli.main import main\n"
        f"for n in range({tasks}):\n"
        "    assert main(['--json', 'task', 'add', f'task {n}', '-p', 'HML'[n % 3]]) == 0\n"
        f"for n in range({picks}):\n"
        "    assert main(['--json', 'task', 'add', f'pick {n}', '--domain', 'pick']) == 0\n"
    )
    subprocess.run([sys.executable, "-c", script], cwd=work, env=env, check=True, capture_output=True)
    sh([*MICHI, "--json", "task", "list"], work, env)
    return work


LINE = re.compile(r"import time:\s+(\d+) \|\s+\d+ \|\s*(\S+)")


def import_breakdown(args: list[str], cwd: Path, env: dict[str, str], top: int = 8) -> str:
    """Self import time by top-level package for one run of `michi ARGS` (`python -X importtime`)."""
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "michi", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
    )
    per: Counter[str] = Counter()
    for match in LINE.finditer(proc.stderr):
        per[match.group(2).split(".")[0]] += int(match.group(1))
    total = sum(per.values())
    parts = ", ".join(f"{name} {us / 1000:.1f}" for name, us in per.most_common(top))
    return f"  {' '.join(args):<28} {total / 1000:6.1f} ms: {parts}"
