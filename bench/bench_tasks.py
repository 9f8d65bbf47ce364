"""Tasks at scale, in one run on the same 10,000 tasks: `michi task list --json` against Taskwarrior's
`task export`, and `michi task add` against `task add` and the raw git sequence (ADR 0006).

`python bench/run.py tasks` (or MICHI_BENCH_TASKS=2000 for a quicker run).
"""

from __future__ import annotations

import os
import shutil
import statistics
import sys
import uuid as uuidlib
from collections.abc import Callable
from pathlib import Path

from _startup import MICHI, interpreter_note, prepared_env
from _util import isolated_git_env, row, sh, tempdir, timed

from michi.tasks import serialization
from michi.tasks.model import Task, tw_date


def _populate(work: Path, count: int) -> Path:
    """Task files written directly (10,000 `michi task add` calls would take minutes), one commit."""
    (work / ".tasks").mkdir()
    now = tw_date(1_700_000_000)
    for n in range(1, count + 1):
        task = Task(uuid=str(uuidlib.uuid4()), id=n, description=f"task number {n}", entry=now, modified=now,
                    priority="HML"[n % 3], tags=("bench",), project="p")  # fmt: skip
        (work / ".tasks" / f"{task.uuid}.json").write_bytes(serialization.dumps(task))
    (work / ".michi").mkdir()
    (work / ".michi" / "last-id").write_text(f"{count}\n")
    export = work.parent / "export.json"
    records = [p.read_text() for p in sorted((work / ".tasks").glob("*.json"))]
    export.write_text("[" + ",".join(records) + "]\n")
    return export


def timed_pair(
    first: Callable[[], object], second: Callable[[], object], repeat: int
) -> tuple[list[float], list[float]]:
    """Both timed in turn, `repeat` times each, after one warm-up of each."""
    a: list[float] = []
    b: list[float] = []
    for _ in range(repeat):
        a += timed(first, repeat=1, warmup=0 if a else 1)
        b += timed(second, repeat=1, warmup=0 if b else 1)
    return a, b


def populated(root: Path, env: dict[str, str], count: int) -> tuple[Path, Path]:
    """`root/work`, a clone of `root/origin.git` holding `count` tasks, pushed; and their export."""
    sh(["git", "init", "-q", "--bare", "-b", "main", "origin.git"], root, env)
    sh(["git", "clone", "-q", "origin.git", "work"], root, env)
    work = root / "work"
    export = _populate(work, count)
    sh("git add -A && git commit -qm tasks && git push -q origin HEAD:main", work, env)
    return work, export


def main() -> None:
    count = int(os.environ.get("MICHI_BENCH_TASKS", "10000"))
    root = tempdir("tasks")
    env = prepared_env(isolated_git_env(root))
    try:
        work, export = populated(root, env, count)
        sh(["git", "clone", "-q", "origin.git", "raw"], root, env)
        print(interpreter_note())
        print(f"{count} tasks")
        list_cmd = [*MICHI, "--json", "task", "list"]
        cold = timed(lambda: sh(list_cmd, work, env), repeat=1, warmup=0)  # builds the cache
        task = shutil.which("task")
        tw_export: list[float] | None = None
        tw_add: list[float] | None = None
        if task:
            data = root / "twdata"
            data.mkdir()
            (root / "taskrc").write_text(
                f"data.location={data}\nconfirmation=off\njson.array=on\nverbose=nothing\n"
            )
            twenv = {**env, "TASKDATA": str(data), "TASKRC": str(root / "taskrc")}
            sh([task, "import", str(export)], root, twenv)
            # Alternate the two, so a busy machine slows both alike rather than whichever ran second.
            warm, tw_export = timed_pair(
                lambda: sh(list_cmd, work, env), lambda: sh([task, "export"], root, twenv), repeat=11
            )
            tw_add = timed(lambda: sh([task, "add", "one more"], root, twenv), repeat=7)
        else:
            warm = timed(lambda: sh(list_cmd, work, env), repeat=11)
        print(row("michi task list --json (cold cache)", cold, tw_export))
        print(row("michi task list --json (cache warm)", warm, tw_export))
        if tw_export:
            print(row("task export (Taskwarrior)", tw_export))
        counter = iter(range(10**6))
        add = timed(
            lambda: sh([*MICHI, "--json", "task", "add", f"new {next(counter)}"], work, env), repeat=7
        )
        raw_dir = root / "raw"

        def raw_add() -> None:
            name = f".tasks/{uuidlib.uuid4()}.json"
            (raw_dir / name).write_text('{"description": "raw"}\n')
            sh(f"git pull -q --rebase && git add {name} && git commit -qm raw && git push -q", raw_dir, env)

        raw = timed(raw_add, repeat=7)
        print(row("michi task add", add, tw_add))
        if tw_add:
            print(row("task add (Taskwarrior)", tw_add))
        print(row("raw git: pull --rebase, add, commit, push", raw))
        print(f"michi task add vs raw git: {statistics.median(add) / statistics.median(raw):.2f}x")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    main()
