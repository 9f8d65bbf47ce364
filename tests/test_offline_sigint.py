"""Ctrl-C at a terminal during an offline or remote-less commit (ADR 0004, "Signals between the steps").

A terminal sends SIGINT to its whole foreground process group: michi and every git it started there. michi
defers the signal from its journal entry until the branch has moved, but a git cut half-way (the move's
`restore`, the branch's `update-ref`) failed the command with the index moved and the branch not. The git
processes of that deferred section run in sessions of their own: only michi gets the terminal's signal, and
it decides. A `git` on PATH that waits at the branch's `update-ref` holds michi there while the test sends
SIGINT to michi's process group, as the terminal does; so does one at the move's `restore`.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import Remote, git, run_michi
from lockkit import wait_until


def _slow_git(tmp_path: Path, step: str) -> tuple[dict[str, str], Path]:
    """An environment whose `git` stops at `step` (`update-ref`, or the move's `restore`, which michi runs
    as `git -c core.hooksPath=... restore`) until a file appears, after saying it got there."""
    real = shutil.which("git")
    assert real is not None
    gate = tmp_path / "gate"
    folder = tmp_path / "slow-git"
    folder.mkdir()
    script = folder / "git"
    script.write_text(
        "#!/bin/sh\n"
        f'if {{ [ "$1" = {step} ] || [ "$3" = {step} ]; }} && [ -n "$SLOW_GIT_GATE" ]; then\n'
        '  : > "$SLOW_GIT_GATE.ready"\n'
        '  while [ ! -e "$SLOW_GIT_GATE.go" ]; do sleep 0.01; done\n'
        "fi\n"
        f'exec {real} "$@"\n'
    )
    script.chmod(0o755)
    env = {**os.environ, "PATH": f"{folder}{os.pathsep}{os.environ['PATH']}", "SLOW_GIT_GATE": str(gate)}
    return env, gate


def _journal(work: Path) -> list[str]:
    path = work / ".git/michi/journal.json"
    return [e["command"] for e in json.loads(path.read_text())["entries"]] if path.exists() else []


@pytest.mark.parametrize("step", ["restore", "update-ref"])
@pytest.mark.parametrize("where", ["offline", "no remote"])
def test_a_terminal_ctrl_c_while_git_moves_the_branch_is_michis_to_decide(
    remote: Remote, local_repo: Path, tmp_path: Path, where: str, step: str
) -> None:
    work = remote.clone("work") if where == "offline" else local_repo
    assert run_michi(work, "init").exit_code == 0
    (work / "notes.txt").write_text("mine\n")
    git(work, "add", "notes.txt")  # the user's staged work
    before = git(work, "rev-parse", "main")
    env, gate = _slow_git(tmp_path, step)
    flags = ["--offline"] if where == "offline" else []

    michi = subprocess.Popen(
        [sys.executable, "-m", "michi", "task", "add", "X", *flags],
        cwd=work,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # michi leads its process group, as a shell's foreground job does
    )
    try:
        wait_until(lambda: Path(f"{gate}.ready").exists() or michi.poll() is not None, what=step)
        assert michi.poll() is None, michi.communicate()
        os.killpg(michi.pid, signal.SIGINT)  # the terminal's Ctrl-C: to the whole foreground group
        Path(f"{gate}.go").touch()
        _out, err = michi.communicate(timeout=60)
    finally:
        if michi.poll() is None:
            michi.kill()
            michi.wait()

    # The journal named the change when the Ctrl-C came: michi lets the move end, and the change is made.
    assert michi.returncode == 0, err
    assert git(work, "log", "-1", "--format=%s", "main") == "michi: task add 1"
    assert git(work, "rev-parse", "main~1") == before
    assert git(work, "diff", "--cached", "--name-only") == "notes.txt"  # nothing of michi's left staged
    assert git(work, "status", "--porcelain", "--", ".tasks") == ""  # work tree and index at the commit
    assert _journal(work) == (["task add X --offline"] if where == "offline" else [])
    if where == "offline":
        assert run_michi(work, "sync").exit_code == 0
        assert git(remote.bare, "log", "-1", "--format=%s", "main") == "michi: task add 1"
