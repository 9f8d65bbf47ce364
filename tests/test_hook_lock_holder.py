"""The hook and the lock's holders (ADR 0005): a script's own commits pass, a dead `lock run` whose
command still runs blocks, and a hook whose michi went away falls back to the one on PATH."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from conftest import git
from lockkit import bash, dead_pid, michi_on_path, write_record
from test_hook_support import commit, installed

from michi.hook import script
from michi.lock import procs


def test_a_script_holding_the_lock_commits_with_the_hook_installed(local_repo: Path, tmp_path: Path) -> None:
    installed(local_repo)
    steps = """
token=$(michi lock acquire --wait 0)
date > gen.txt; git add gen.txt; git commit -qm "by the holder"; echo $? > plain.rc
date >> gen.txt; (git commit -qam "from a subshell"); echo $? > subshell.rc
michi lock release --token "$token"
"""
    result = bash(local_repo, steps, michi_on_path(tmp_path))
    assert result.returncode == 0, result.stderr
    assert (local_repo / "plain.rc").read_text().strip() == "0", result.stderr
    assert (local_repo / "subshell.rc").read_text().strip() == "0", result.stderr
    assert git(local_repo, "log", "-2", "--format=%s") == "from a subshell\nby the holder"


def test_someone_else_is_still_refused_while_a_script_holds_it(local_repo: Path) -> None:
    installed(local_repo)
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    try:
        write_record(local_repo, pid=sleeper.pid)  # a script elsewhere, not our ancestor
        proc = commit(local_repo)
        assert proc.returncode != 0 and f"PID {sleeper.pid}" in proc.stderr
    finally:
        sleeper.kill()
        sleeper.wait()


def test_a_dead_lock_run_whose_command_still_runs_blocks(local_repo: Path) -> None:
    installed(local_repo)
    leftover = subprocess.Popen(["sleep", "120"], process_group=0)
    try:
        ticks = procs.start_ticks(leftover.pid)
        write_record(local_repo, pid=dead_pid(), pgid=leftover.pid, pgid_ticks=ticks)
        proc = commit(local_repo)
        assert proc.returncode != 0 and "held by another process" in proc.stderr
        assert f"its command still runs as PID {leftover.pid}" in proc.stderr
    finally:
        leftover.kill()
        leftover.wait()
    passed = commit(local_repo)  # its command is gone now: a stale lock, warned about
    assert passed.returncode == 0 and "stale" in passed.stderr


def test_a_hook_whose_michi_is_gone_uses_michi_on_path(local_repo: Path, tmp_path: Path) -> None:
    hook = local_repo / ".git" / "hooks" / "pre-commit"
    # The interpreter is there, michi is not importable from the recorded folder (checkout moved).
    hook.write_text(script.render(python=sys.executable, roots=[str(tmp_path / "moved-away")]))
    hook.chmod(0o755)
    on_path = michi_on_path(tmp_path)
    proc = commit(local_repo, env={"PATH": on_path["PATH"]})
    assert proc.returncode == 0, proc.stderr
    assert "ModuleNotFoundError" not in proc.stderr and "Traceback" not in proc.stderr
    refused = commit(
        local_repo, env={"PATH": "/usr/bin:/bin", "PYTHONPATH": os.environ.get("PYTHONPATH", "")}
    )
    assert refused.returncode != 0
    lines = refused.stderr.strip().splitlines()
    assert len(lines) == 1 and "cannot find michi" in lines[0] and "michi hook install" in lines[0]
