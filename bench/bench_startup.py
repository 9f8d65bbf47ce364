"""Fresh-process cost of every kind of michi command against its baseline, interleaved in one run.

Baselines: `python -c pass` (the interpreter's own start-up, same interpreter and environment) for the
commands that do no git work, and the raw git sequence (`mkdir; pull --rebase; write; add; commit; push;
rmdir` on its own local bare remote) for the changing ones. Goals (ADR 0010): `--version` within 2x of
`python -c pass`, `--help` within 4x, `task list --json` at 100 tasks within 2.5x; `task add`, `start`,
`done`, `claim` and `next --claim` within 1.5x of the raw sequence; the rows marked "(served)" run them with
`michi server` running (ADR 0016). Every row runs `python -m michi`, but one runs the script pip installs
(`scripts/michi`). Then the import-time breakdown by
top-level package, so a regression shows its cause. `MICHI_BENCH_N` sets the rounds (default 15).

The interpreter is a bare venv without this machine's site-packages `.pth` hooks, as a user's install
has (bench/_startup.py); the running interpreter's own `python -c pass` is timed alongside, so the
difference shows. `MICHI_BENCH_PYTHON=system` times everything with the running interpreter instead.
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

from _startup import (
    MICHI,
    PYTHON,
    RAW,
    bare_with_clone,
    import_breakdown,
    interpreter_note,
    michi_clone,
    pip_script,
    prepared_env,
)
from _util import isolated_git_env, sh, tempdir

GOALS = {
    "--version": 2.0,
    "--help": 4.0,
    "task --help": 4.0,
    "task list --json": 2.5,
    "task list --json (served)": 2.5,
    "--help (served)": 4.0,
    "task --help (served)": 4.0,
}
SERVED = " (served)"  # rows run with `michi server` running (ADR 0016); the others run michi in-process


def _table(samples: dict[str, list[float]], base: dict[str, str]) -> None:
    print(f"{'command (fresh process)':<34} {'median':>9} {'p95':>9}  {'baseline':<16} {'ratio':>6}  goal")
    for name, values in samples.items():
        med = statistics.median(values)
        p95 = sorted(values)[min(len(values) - 1, round(0.95 * (len(values) - 1)))]
        line = f"{name:<34} {med * 1000:7.1f}ms {p95 * 1000:7.1f}ms"
        ref = base.get(name)
        if ref:
            ratio = med / statistics.median(samples[ref])
            goal = GOALS.get(name, 1.5)
            line += f"  {ref:<16} {ratio:5.2f}x  {'ok' if ratio <= goal else 'MISSED'} (<= {goal}x)"
        print(line)


def main() -> None:
    rounds = int(os.environ.get("MICHI_BENCH_N", "15"))
    root = tempdir("startup")
    env = prepared_env(isolated_git_env(root))
    raw = bare_with_clone(root, "raw", env)
    tasks = 100 + 4 * (rounds + 1)
    work = michi_clone(root, "michi", env, tasks=tasks, picks=2 * (rounds + 2))
    reader = michi_clone(root, "reader", env, tasks=100)  # nothing changes it: its list cache stays warm
    names = (f"n{n}" for n in range(10**6))
    ids = iter(range(tasks, 0, -1))  # start, done and claim each take the next id down from the top
    cmds: dict[str, Callable[[], list[str]]] = {
        "python -c pass": lambda: [PYTHON, "-c", "pass"],
        "raw git sequence": lambda: ["bash", "-c", RAW, "raw", next(names)],
        "--version": lambda: [*MICHI, "--version"],
        "--help": lambda: [*MICHI, "--help"],
        "task --help": lambda: [*MICHI, "task", "--help"],
        "task list --json": lambda: [*MICHI, "--json", "task", "list"],  # 100 tasks, warm
        "task add": lambda: [*MICHI, "--json", "task", "add", next(names)],
        "task start": lambda: [*MICHI, "--json", "task", "start", str(next(ids))],
        "task done": lambda: [*MICHI, "--json", "task", "done", str(next(ids))],
        "task claim": lambda: [*MICHI, "--json", "--agent", "b", "task", "claim", str(next(ids))],
        "task next --claim": lambda: [
            *MICHI,
            "--json",
            "--agent",
            "b",
            "task",
            "next",
            "--claim",
            "--domain=pick",
        ],
    }
    pick = ["--json", "--agent", "b", "task", "next", "--claim", "--domain=pick"]
    script = pip_script(root)
    cmds |= {
        "--help" + SERVED: lambda: [*MICHI, "--help"],
        "task --help" + SERVED: lambda: [*MICHI, "task", "--help"],
        "task list --json" + SERVED: lambda: [*MICHI, "--json", "task", "list"],
        "task add" + SERVED: lambda: [*MICHI, "--json", "task", "add", next(names)],
        "task add (pip script)" + SERVED: lambda: [*script, "--json", "task", "add", next(names)],
        "task done" + SERVED: lambda: [*MICHI, "--json", "task", "done", str(next(ids))],
        "task next --claim" + SERVED: lambda: [*MICHI, *pick],
    }
    if sys.executable != PYTHON:  # the machine's interpreter, .pth hooks and all: for comparison only
        cmds = {"python -c pass (machine's python)": lambda: [sys.executable, "-c", "pass"], **cmds}
    base = {name: "python -c pass" for name in GOALS} | {
        name: "raw git sequence" for name in cmds if name.startswith("task ") and name not in GOALS
    }
    samples: dict[str, list[float]] = {name: [] for name in cmds}
    here = {**env, "MICHI_SERVER": "off"}
    served = {**env, "MICHI_SERVER_DIR": str(root / "srv")}
    sh([*MICHI, "server", "start"], work, served)
    try:
        for round_ in range(rounds + 1):  # interleaved, so drift in machine load hits every row alike
            for name, cmd in cmds.items():
                plain = name.removesuffix(SERVED)
                where = {"raw git sequence": raw, "task list --json": reader}.get(plain, work)
                args = cmd()
                start = time.perf_counter()
                sh(args, where, served if name.endswith(SERVED) else here)
                if round_:  # the first round warms caches, bytecode and the OS's file cache
                    samples[name].append(time.perf_counter() - start)
    finally:
        sh([*MICHI, "server", "stop"], work, served)
    print(interpreter_note())
    print(f"{rounds} rounds, {tasks} tasks; medians are noisy on a busy machine, ratios less so")
    _table(samples, base)
    print("import time by top-level package (self ms, one run each; `python -X importtime`):")
    for args in (["--version"], ["--help"], ["--json", "task", "list"], ["--json", "task", "add", "imp"]):
        print(import_breakdown(args, reader if "list" in args else work, env))
    print(f"(workdir {Path(root).name}: removed by the OS temp cleaner)")


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    main()
