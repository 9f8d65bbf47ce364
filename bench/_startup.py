"""What the start-up benchmarks share: a prepared interpreter, the repositories, the raw git sequence,
and the import-time breakdown by top-level package.

The interpreter (`PYTHON`, and `MICHI` runs michi with it) is by default a bare venv under
`bench/.cache/` built from the running one: `python -m venv --without-pip` plus a `base.pth` naming the
running interpreter's site-packages, so it sees the same packages (typer, rich, ...) but runs none of
that site-packages' `.pth` start-up hooks. A user's install (pipx, uv tool, a venv) has none of the
hooks a development machine collects (an editable-install finder, a sandbox's CA injector: ~50 ms per
process here, more than michi's `--version`), and michi is timed as users run it (ADR 0010).
`MICHI_BENCH_PYTHON=system` times with the running interpreter as it is; any other value is an
interpreter's path.
"""

from __future__ import annotations

import compileall
import importlib.util
import os
import re
import subprocess
import sys
import sysconfig
from collections import Counter
from pathlib import Path

from _util import sh

CACHE = Path(__file__).resolve().parent / ".cache"


def bench_python() -> str:
    """The interpreter the fresh-process benchmarks run (see the module docstring)."""
    wanted = os.environ.get("MICHI_BENCH_PYTHON", "venv")
    if wanted == "system":
        return sys.executable
    if wanted != "venv":
        return wanted
    base = sysconfig.get_paths()["purelib"]
    venv = CACHE / f"python{sys.version_info[0]}.{sys.version_info[1]}-venv"
    python = venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    pth = Path(sysconfig.get_paths(vars={"base": str(venv), "platbase": str(venv)})["purelib"]) / "base.pth"
    fresh = python.exists() and pth.exists() and pth.read_text() == base + "\n"
    if not fresh:
        subprocess.run([sys.executable, "-m", "venv", "--clear", "--without-pip", str(venv)], check=True)
        pth.parent.mkdir(parents=True, exist_ok=True)
        pth.write_text(base + "\n")
    return str(python)


def interpreter_note() -> str:
    """One line saying which interpreter the timed processes run."""
    if sys.executable == PYTHON:
        return f"interpreter: {PYTHON} (the running one, with its site-packages' .pth hooks)"
    return f"interpreter: {PYTHON} (a bare venv on {sys.executable}: no site-packages .pth hooks)"


PYTHON = bench_python()
MICHI = [PYTHON, "-m", "michi"]
# The script pip (pipx, uv) installs as `michi`: michi's own `scripts/michi` with the interpreter's path
# written over its `#!python` (pyproject's `script-files`). An entry point's generated script would import
# `re` before michi runs, ~5 ms per command (ADR 0016).
OWN_SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "michi"


def pip_script(root: Path) -> list[str]:
    """michi run as pip installs it: its console script, for the bench's interpreter."""
    script = root / "bin" / "michi"
    script.parent.mkdir(exist_ok=True)
    script.write_text(OWN_SCRIPT.read_text().replace("#!python\n", f"#!{PYTHON}\n", 1))
    script.chmod(0o755)
    return [str(script)]


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
    subprocess.run([PYTHON, "-c", script], cwd=work, env=env, check=True, capture_output=True)
    sh([*MICHI, "--json", "task", "list"], work, env)
    return work


LINE = re.compile(r"import time:\s+(\d+) \|\s+\d+ \|\s*(\S+)")


def import_breakdown(args: list[str], cwd: Path, env: dict[str, str], top: int = 8) -> str:
    """Self import time by top-level package for one run of `michi ARGS` (`python -X importtime`)."""
    proc = subprocess.run(
        [PYTHON, "-X", "importtime", "-m", "michi", *args],
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
