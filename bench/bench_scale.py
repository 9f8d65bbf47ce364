"""michi as the repository grows (100, 1k, 10k, 50k tasks in one domain) against Taskwarrior on the
same tasks, in one run: fresh processes, medians, ratios (ADR 0015).

`python bench/run.py scale`; MICHI_BENCH_SCALE=100,1000 for a quicker run; MICHI_BENCH_ROWS=0 measures only
the bulk import (MICHI_BENCH_REPEAT runs, michi and `task import` alternated). The repositories are built
once with `git fast-import` (50,000 `michi task add` calls would take hours) and cached in
`bench/.cache/` (gitignored); each measurement works on a fresh copy of the cached remote. They use the
fan-out layout of `michi init` (ADR 0006); MICHI_BENCH_LAYOUT=flat builds the legacy flat one instead.
The baseline of the changing commands is git's own: one task file added by hand (`git add`, `git commit`,
`git push`) in a clone of another copy of the same remote, timed in the same run; the table shows how
much of michi's growth from the smallest size is the push's (the remote's connectivity check walks every
tree of the old tip: work that grows with the tasks whoever pushes).

Nothing the bench made is deleted until every measurement is done: on an ext4 without a journal (this
project's CI and bench machines) a file created within a minute of many deletions costs several times
more (the kernel skips each recently deleted inode, ADR 0015), so a run that deleted the last run's
50,000 files would charge that to the next. The import line also times 50,000 plain file creations on
the same disk, in the same run: the floor any tool keeping a file per task pays.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import time
import uuid as uuidlib
from collections.abc import Callable
from pathlib import Path

from _startup import MICHI, PYTHON, interpreter_note, prepared_env
from _util import isolated_git_env, sh, tempdir

from michi.tasks import serialization
from michi.tasks.domains import FANOUT, FLAT, LAYOUT_PATH, ROOT, task_path
from michi.tasks.model import Task, tw_date

HERE = Path(__file__).resolve().parent
CACHE = HERE / ".cache" / "scale"
DRIVER = [PYTHON, str(HERE / "_scale_driver.py")]
FORMAT = "1"  # bump when the generated repository changes
# Runs a command, then prints its peak RSS in KiB (the largest child's: Taskwarrior's own process).
PEAK = [
    sys.executable,
    "-c",
    "import resource, subprocess, sys; subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, check=True); "
    "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)",
]


def _records(count: int) -> list[Task]:
    now = tw_date(1_700_000_000)
    rng = uuidlib.UUID(int=count)  # deterministic uuids: the same repository on every machine
    return [
        Task(
            uuid=str(uuidlib.uuid5(rng, str(n))),
            id=n,
            description=f"task number {n}",
            entry=now,
            modified=now,
            priority="HML"[n % 3],
            tags=("bench",),
            project="p",
        )
        for n in range(1, count + 1)
    ]


def _layout() -> str:
    layout = os.environ.get("MICHI_BENCH_LAYOUT", FANOUT)
    assert layout in (FANOUT, FLAT), layout
    return layout


def _fast_import(bare: Path, tasks: list[Task], env: dict[str, str], layout: str) -> None:
    """One commit holding every task file, the id counter and the layout marker, fed to `git fast-import`."""
    chunks = [b"commit refs/heads/main\ncommitter Bench <bench@example.invalid> 1700000000 +0000\n"]
    msg = b"bench: tasks"
    chunks.append(b"data %d\n%s\n" % (len(msg), msg))
    counter = f"{len(tasks)}\n".encode()
    chunks.append(b"M 100644 inline .michi/last-id\ndata %d\n%s\n" % (len(counter), counter))
    if layout == FANOUT:
        marker = f"{FANOUT}\n".encode()
        chunks.append(b"M 100644 inline %s\ndata %d\n%s\n" % (LAYOUT_PATH.encode(), len(marker), marker))
    for task in tasks:
        data = serialization.dumps(task)
        path = task_path(ROOT, task.uuid, layout).encode()
        chunks.append(b"M 100644 inline %s\ndata %d\n%s\n" % (path, len(data), data))
    subprocess.run(["git", "fast-import", "--quiet"], cwd=bare, env=env, input=b"".join(chunks), check=True)


def build(count: int, env: dict[str, str], task: str | None) -> Path:
    """The cached folder for `count` tasks: origin.git, export.json and (with Taskwarrior) twdata/."""
    layout = _layout()  # the flat cache keeps its old key; fan-out ones get their own
    where = CACHE / (f"{count}-v{FORMAT}" if layout == FLAT else f"{count}-{layout}-v{FORMAT}")
    if (where / "done").exists():
        if task and not (where / "twdata-done").exists():  # built by a bench that ran no Taskwarrior
            _tw_import(where, env, task)
        return where
    shutil.rmtree(where, ignore_errors=True)
    where.mkdir(parents=True)
    tasks = _records(count)
    sh(["git", "init", "-q", "--bare", "-b", "main", "origin.git"], where, env)
    _fast_import(where / "origin.git", tasks, env, layout)
    (where / "export.json").write_bytes(b"[" + b",".join(serialization.dumps(t) for t in tasks) + b"]\n")
    if task:
        _tw_import(where, env, task)
    (where / "done").write_text("")
    return where


def _tw_import(where: Path, env: dict[str, str], task: str) -> None:
    shutil.rmtree(where / "twdata", ignore_errors=True)
    (where / "twdata").mkdir()
    sh([task, "import", str(where / "export.json")], where, _tw_env(where, env))
    (where / "twdata-done").write_text("")


def _tw_env(where: Path, env: dict[str, str]) -> dict[str, str]:
    rc = where / "taskrc"
    rc.write_text(f"data.location={where / 'twdata'}\nconfirmation=off\njson.array=on\nverbose=nothing\n")
    return {**env, "TASKDATA": str(where / "twdata"), "TASKRC": str(rc)}


class Michi:
    """A fresh clone of a copy of the cached remote; commands run as fresh processes."""

    def __init__(self, cached: Path, root: Path, env: dict[str, str]) -> None:
        self.root = root
        sh(["git", "clone", "-q", "--bare", str(cached / "origin.git"), "origin.git"], root, env)
        sh(["git", "clone", "-q", "origin.git", "work"], root, env)
        self.work = root / "work"
        self.timings = root / "timings.jsonl"
        self.env = {**env, "MICHI_BENCH_TIMINGS": str(self.timings), "MICHI_AGENT": "bench"}
        self.env.pop("PYTHONDONTWRITEBYTECODE", None)  # users have bytecode

    def run(self, *args: str) -> float:
        """Wall time of one changing command; its transaction's timings go to self.timings."""
        start = time.perf_counter()
        sh([*DRIVER, "--json", *args], self.work, self.env)
        return time.perf_counter() - start

    def read(self, *args: str) -> float:
        """Wall time of one read, as `python -m michi` runs it (the driver would import the engine)."""
        start = time.perf_counter()
        sh([*MICHI, "--json", *args], self.work, self.env)
        return time.perf_counter() - start

    def holds(self) -> list[float]:
        lines = self.timings.read_text().splitlines() if self.timings.exists() else []
        self.timings.unlink(missing_ok=True)
        return [json.loads(line)["lock_hold"] for line in lines]

    def drop_caches(self) -> None:
        for name in ("task-index.v3", "task-list.v1"):
            (self.work / ".git" / "michi" / name).unlink(missing_ok=True)


class RawGit:
    """git's own add of one task file, as an agent would script it without michi: a clone of another
    copy of the cached remote; a new task file written, `git add`, `git commit`, `git push`."""

    def __init__(self, cached: Path, root: Path, env: dict[str, str]) -> None:
        sh(["git", "clone", "-q", "--bare", str(cached / "origin.git"), "raw.git"], root, env)
        sh(["git", "clone", "-q", "raw.git", "raw"], root, env)
        self.work, self.env, self.count = root / "raw", env, 0

    def add(self) -> tuple[float, float]:
        """Wall time of the whole sequence, and of its push alone."""
        self.count += 1
        now = tw_date(1_700_000_000)
        task = Task(uuid=str(uuidlib.uuid4()), id=0, description=f"raw {self.count}", entry=now, modified=now)
        path = task_path(ROOT, task.uuid, _layout())
        start = time.perf_counter()
        (self.work / path).parent.mkdir(parents=True, exist_ok=True)
        (self.work / path).write_bytes(serialization.dumps(task))
        sh(["git", "add", "--", path], self.work, self.env)
        sh(["git", "commit", "-q", "-m", f"raw {self.count}"], self.work, self.env)
        pushing = time.perf_counter()
        sh(["git", "push", "-q", "origin", "main"], self.work, self.env)
        end = time.perf_counter()
        return end - start, end - pushing


def _ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


def measure(
    sizes: list[int], env: dict[str, str], task: str | None, repeat: int, later: list[Path]
) -> dict[int, dict[str, float]]:
    """Every size's repository side by side, each operation interleaved across the sizes (add at 100,
    add at 10k, add at 50k, add at 100...), so that machine load hits every size alike and the ratios
    against the smallest hold within one run."""
    built = {n: build(n, env, task) for n in sizes}
    roots = {n: tempdir(f"scale-{n}") for n in sizes}
    later.extend(roots.values())
    ms = {n: Michi(built[n], roots[n], env) for n in sizes}
    raws = {n: RawGit(built[n], roots[n], env) for n in sizes}
    out: dict[int, dict[str, float]] = {n: {} for n in sizes}
    for m in ms.values():
        m.read("task", "list")  # the first read pays for the cache
        m.holds()
    # The clones' 50,000 new files may still be on their way to the disk: written now, so that the first
    # timed commands at the largest size do not compete with the bench's own set-up.
    os.sync()

    def interleaved(key: str, *args: str, numbered: bool = False) -> None:
        samples: dict[int, list[float]] = {n: [] for n in sizes}
        for i in range(1, repeat + 1):
            for n in sizes:
                samples[n].append(ms[n].run(*args, *((str(i),) if numbered else ())))
        for n in sizes:
            out[n][key], out[n][f"{key}_hold"] = _ms(samples[n]), _ms(ms[n].holds())

    raw: dict[int, list[tuple[float, float]]] = {n: [] for n in sizes}
    for _ in range(repeat):
        for n in sizes:
            raw[n].append(raws[n].add())
    for n in sizes:
        out[n]["raw"] = _ms([whole for whole, _ in raw[n]])
        out[n]["raw_push"] = _ms([push for _, push in raw[n]])
    interleaved("add", "task", "add", "new")
    interleaved("done", "task", "done", numbered=True)
    interleaved("claim", "task", "next", "--claim")
    reads: dict[str, dict[int, list[float]]] = {k: {n: [] for n in sizes} for k in ("cold", "warm", "export")}
    # As many reads as changing commands: a cold read is ~1 s and spreads widely on shared cores.
    for _ in range(max(5, repeat)):
        for n in sizes:
            ms[n].drop_caches()
            reads["cold"][n].append(ms[n].read("task", "list"))
            reads["warm"][n].append(ms[n].read("task", "list"))
            if task:
                twenv = _tw_env(built[n], env)
                start = time.perf_counter()
                sh([task, "export"], roots[n], twenv)
                reads["export"][n].append(time.perf_counter() - start)
    for key, by_size in reads.items():
        for n, samples in by_size.items():
            if samples:
                out[n][key] = _ms(samples)
    return out


def bulk_import(count: int, env: dict[str, str], task: str | None, later: list[Path]) -> dict[str, float]:
    """Every task of the cached export into an empty repository: michi import (commits and pushes) against
    `task import` into an empty Taskwarrior data folder; one run each (they take seconds). Before them,
    `count` plain file creations on the same disk: the floor of a file per task."""
    cached = build(count, env, task)
    root = tempdir(f"import-{count}")
    later.append(root)
    out = {"floor": _creations(root / "floor", count, cached / "export.json")}
    sh(["git", "init", "-q", "--bare", "-b", "main", "origin.git"], root, env)
    sh(["git", "clone", "-q", "origin.git", "work"], root, env)
    work = root / "work"
    runenv = {**env, "MICHI_BENCH_TIMINGS": str(root / "t.jsonl"), "MICHI_BENCH_RSS": str(root / "rss")}
    runenv.pop("PYTHONDONTWRITEBYTECODE", None)
    sh([*DRIVER, "init"], work, runenv)
    os.sync()  # the disk settles first (the other tool's writes): each timed run pays for its own writes
    start = time.perf_counter()
    sh([*DRIVER, "--json", "import", str(cached / "export.json")], work, runenv)
    out["import"] = time.perf_counter() - start
    out["import_mb"] = int((root / "rss").read_text()) / 1024
    out["import_commits"] = float(sh(["git", "rev-list", "--count", "main"], root / "origin.git", env))
    if task:
        (root / "twdata").mkdir()
        rc = root / "taskrc"
        rc.write_text(f"data.location={root / 'twdata'}\nconfirmation=off\nverbose=nothing\n")
        os.sync()
        start = time.perf_counter()
        peak = sh([*PEAK, task, "import", str(cached / "export.json")], root, {**env, "TASKRC": str(rc)})
        out["tw_import"] = time.perf_counter() - start
        out["tw_import_mb"] = int(peak.strip().splitlines()[-1]) / 1024
    return out


def _creations(where: Path, count: int, export: Path) -> float:
    """Seconds to create `count` files of the export's mean task size in 256 folders, as michi's fan-out
    layout has them: no git, no Python per task beyond the loop."""
    size = max(1, export.stat().st_size // count)
    data = b"x" * size
    os.sync()
    start = time.perf_counter()
    where.mkdir()
    folders = [where / f"{i:02x}" for i in range(256)]
    for folder in folders:
        folder.mkdir()
    for i in range(count):
        fd = os.open(folders[i % 256] / f"{i:036d}.json", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        os.write(fd, data)
        os.close(fd)
    return time.perf_counter() - start


ROWS = [
    ("michi task add (ms)", "add"),
    ("  lock held per add (ms)", "add_hold"),
    ("michi task done (ms)", "done"),
    ("  lock held per done (ms)", "done_hold"),
    ("michi task next --claim (ms)", "claim"),
    ("  lock held per claim (ms)", "claim_hold"),
    ("git's own add: write, git add, commit, push (ms)", "raw"),
    ("  of which git push (ms)", "raw_push"),
    ("michi task list --json, cold cache (ms)", "cold"),
    ("michi task list --json, warm (ms)", "warm"),
    ("Taskwarrior task export (ms)", "export"),
]


def main() -> None:
    sizes = [int(s) for s in os.environ.get("MICHI_BENCH_SCALE", "100,1000,10000,50000").split(",")]
    repeat = int(os.environ.get("MICHI_BENCH_REPEAT", "5"))
    env = prepared_env(isolated_git_env(tempdir("home")))
    print(interpreter_note())
    task = shutil.which("task")
    later: list[Path] = []  # deleted once every measurement is done (see the module's docstring)
    try:
        _report(sizes, env, task, repeat, later)
    finally:
        for root in later:
            shutil.rmtree(root, ignore_errors=True)


def _report(sizes: list[int], env: dict[str, str], task: str | None, repeat: int, later: list[Path]) -> None:
    if os.environ.get("MICHI_BENCH_ROWS", "1") == "0":  # the import alone, at the largest size
        _print_import(sizes[-1], env, task, later, repeat)
        return
    results = measure(sizes, env, task, repeat, later)
    print("| tasks | " + " | ".join(f"{n:,}" for n in sizes) + " |")
    print("|---|" + "---|" * len(sizes))
    for label, key in ROWS:
        cells = [f"{results[n][key]:.0f}" if key in results[n] else "-" for n in sizes]
        print(f"| {label} | " + " | ".join(cells) + " |")
    first = sizes[0]

    def ratios(label: str, value: Callable[[int], float]) -> None:
        print(f"| {label} | " + " | ".join(f"{value(n) / value(first):.2f}" for n in sizes) + " |")

    for key in ("add", "done", "claim"):
        ratios(f"{key} at n vs at {first:,} (x)", lambda n, key=key: results[n][key])
    ratios(f"git's own add at n vs at {first:,} (x)", lambda n: results[n]["raw"])
    for key in ("add", "done", "claim"):
        # What michi's command grew by beyond the push's own growth (which git's add pays alike).
        ratios(
            f"{key} less the push's growth, vs at {first:,} (x)",
            lambda n, key=key: results[n][key] - (results[n]["raw_push"] - results[first]["raw_push"]),
        )
    if task:
        for key in ("cold", "warm"):
            print(
                f"| list {key} / task export (x) | "
                + " | ".join(f"{results[n][key] / results[n]['export']:.2f}" for n in sizes)
                + " |"
            )
    print(
        f"({_layout()} layout; medians of {repeat} fresh processes each, interleaved across the sizes; "
        "2 shared cores: noisy, compare within a run)"
    )
    if os.environ.get("MICHI_BENCH_IMPORT", "1") != "0":
        _print_import(sizes[-1], env, task, later)


def _print_import(big: int, env: dict[str, str], task: str | None, later: list[Path], runs: int = 1) -> None:
    """The bulk import row: one run, or with MICHI_BENCH_ROWS=0 the median of `runs` runs, michi and
    `task import` alternated."""
    got = [bulk_import(big, env, task, later) for _ in range(runs)]
    imp = {key: statistics.median(g[key] for g in got) for key in got[0]}
    each = ", ".join(f"{g['import']:.1f} / {g.get('tw_import', 0):.1f}" for g in got)
    many = f" (median of {runs}; michi / task import each run: {each} s)" if runs > 1 else ""
    text = f"bulk import of {big:,} tasks: michi {imp['import']:.1f} s{many}, peak {imp['import_mb']:.0f} MB"
    text += f", {imp['import_commits'] - 1:.0f} import commits"
    if "tw_import" in imp:
        text += f"; Taskwarrior `task import` {imp['tw_import']:.1f} s, peak {imp['tw_import_mb']:.0f} MB"
        text += f"; ratio {imp['import'] / imp['tw_import']:.2f}x"
    print(text)
    floors = ", ".join(f"{g['floor']:.1f}" for g in got)
    print(
        f"(the disk's floor, {big:,} plain file creations: {imp['floor']:.1f} s"
        + (f"; each run {floors} s" if runs > 1 else "")
        + f"; michi / floor {imp['import'] / imp['floor']:.2f}x)"
    )
    print(f"(machine load: {os.getloadavg()[0]:.1f} {os.getloadavg()[1]:.1f} {os.getloadavg()[2]:.1f})")


if __name__ == "__main__":
    sys.path.insert(0, str(HERE))
    main()
