"""The pre-commit hook's cost (ADR 0005): `git commit` with an empty hook vs with michi's hook.

Aim: michi's hook adds under 50 ms to a commit with no lock held. Rows: whole `git commit`s (no hook,
empty hook, michi's hook without a lock, michi's hook refusing under a live lock held by another
process), then the hook scripts alone, then Python's bare start-up on this machine for scale.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
from pathlib import Path

from _util import isolated_git_env, row, sh, tempdir, timed

from michi.hook import script

REPEAT = 30
HOLDER = (
    "import os,sys;from pathlib import Path;from michi.lock.record import Owner,write_owner;"
    "d=Path(sys.argv[1]);os.mkdir(d);"
    "write_owner(d,Owner.new(pid=os.getpid(),token='bench',ttl=600,command='task done 42',agent='bench'));"
    "print('ready',flush=True);sys.stdin.read()"
)


def _repo(root: Path, env: dict[str, str]) -> Path:
    repo = root / "repo"
    sh(["git", "init", "-q", "-b", "main", str(repo)], root, env)
    (repo / "README.md").write_text("bench\n")
    sh(["git", "add", "README.md"], repo, env)
    sh(["git", "commit", "-q", "-m", "initial"], repo, env)
    return repo


def _set_hook(repo: Path, text: str | None) -> Path:
    hook = repo / ".git" / "hooks" / "pre-commit"
    if text is None:
        hook.unlink(missing_ok=True)
    else:
        hook.write_text(text)
        hook.chmod(0o755)
    return hook


def _commit(repo: Path, env: dict[str, str], expect_ok: bool = True) -> None:
    proc = subprocess.run(
        ["git", "commit", "-q", "--allow-empty", "-m", "b"], cwd=repo, env=env, capture_output=True
    )
    if (proc.returncode == 0) != expect_ok:
        raise RuntimeError(f"unexpected commit outcome {proc.returncode}: {proc.stderr!r}")


def _run(argv: list[str], repo: Path, env: dict[str, str]) -> None:
    subprocess.run(argv, cwd=repo, env=env, check=True, capture_output=True)


def main() -> None:
    root = tempdir("hook")
    env = isolated_git_env(root)
    repo = _repo(root, env)
    michi_hook = script.render()
    results: dict[str, list[float]] = {}

    _set_hook(repo, None)
    results["none"] = timed(lambda: _commit(repo, env), REPEAT)
    empty = _set_hook(repo, "#!/bin/sh\nexit 0\n")
    results["empty"] = timed(lambda: _commit(repo, env), REPEAT)
    results["empty alone"] = timed(lambda: _run([str(empty)], repo, env), REPEAT)
    hook = _set_hook(repo, michi_hook)
    results["michi"] = timed(lambda: _commit(repo, env), REPEAT)
    results["michi alone"] = timed(lambda: _run([str(hook)], repo, env), REPEAT)
    michi_cli = str(Path(sys.executable).parent / "michi")
    results["michi cli"] = timed(lambda: _run([michi_cli, "hook", "run"], repo, env), REPEAT)

    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(repo / ".michi.lock")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == b"ready"
        results["michi refuses"] = timed(lambda: _commit(repo, env, expect_ok=False), REPEAT)
    finally:
        holder.kill()
        holder.wait()

    results["python"] = timed(lambda: _run([sys.executable, "-c", "pass"], repo, env), REPEAT)
    results["python -I -S"] = timed(
        lambda: _run([sys.executable, "-I", "-S", "-c", "pass"], repo, env), REPEAT
    )

    base, alone = results["empty"], results["empty alone"]
    print(row("git commit, no hook", results["none"], base))
    print(row("git commit, empty hook (baseline)", base, base))
    print(row("git commit, michi hook, no lock", results["michi"], base))
    print(row("git commit, michi hook, live lock (refused)", results["michi refuses"], base))
    print(row("hook alone: empty (baseline)", alone, alone))
    print(row("hook alone: michi hook script, no lock", results["michi alone"], alone))
    print(row("hook alone: `michi hook run` (console script)", results["michi cli"], alone))
    print(row("python -c pass (site start-up)", results["python"], alone))
    print(row("python -I -S -c pass", results["python -I -S"], alone))
    added = statistics.median(results["michi"]) - statistics.median(base)
    print(f"michi's hook adds {added * 1000:.1f} ms (median) to a commit with no lock (aim: < 50 ms)")


if __name__ == "__main__":
    main()
