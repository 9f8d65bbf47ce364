"""The pre-commit framework route: `.pre-commit-hooks.yaml` as a user's `.pre-commit-config.yaml` sees it,
run by the real `pre-commit` package on a real `git commit` (ADR 0005)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import git
from test_hook_support import Holder, commit

HOOKS_FILE = Path(__file__).resolve().parents[1] / ".pre-commit-hooks.yaml"


@pytest.fixture
def framework_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """pre-commit's cache inside tmp_path; `michi` and `pre-commit` from this interpreter's scripts."""
    bin_dir = Path(sys.executable).parent
    if not (bin_dir / "pre-commit").exists() or not (bin_dir / "michi").exists():
        pytest.skip("pre-commit and michi must sit next to this interpreter (pip install -e '.[test]')")
    monkeypatch.setenv("PRE_COMMIT_HOME", str(tmp_path / "pre-commit-home"))
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    return bin_dir


def test_michi_lock_hook_through_the_pre_commit_framework(
    framework_env: Path, local_repo: Path, tmp_path: Path
) -> None:
    # A repository publishing michi's hook file, as the michi repo does.
    source = tmp_path / "hooks-source"
    git(tmp_path, "init", "-q", "-b", "main", str(source))
    shutil.copy(HOOKS_FILE, source / ".pre-commit-hooks.yaml")
    git(source, "add", ".pre-commit-hooks.yaml")
    git(source, "commit", "-q", "-m", "hooks")
    rev = git(source, "rev-parse", "HEAD")

    config = f"repos:\n  - repo: {source}\n    rev: {rev}\n    hooks:\n      - id: michi-lock\n"
    (local_repo / ".pre-commit-config.yaml").write_text(config)
    git(local_repo, "add", ".pre-commit-config.yaml")
    git(local_repo, "commit", "-q", "-m", "use pre-commit")
    subprocess.run(
        [str(framework_env / "pre-commit"), "install"], cwd=local_repo, check=True, capture_output=True
    )

    ok = commit(local_repo)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "michi repo lock and task files" in ok.stderr + ok.stdout and "Passed" in ok.stderr + ok.stdout
    with Holder(local_repo) as holder:
        refused = commit(local_repo)
    assert refused.returncode != 0
    output = refused.stdout + refused.stderr
    assert "Failed" in output and "exit code: 75" in output
    assert f"the repo lock is held by another process (PID {holder.pid}" in output
    (local_repo / ".michi.toml").write_text("[michi]\n")  # michi keeps tasks here: hand edits are refused
    refused = commit(local_repo, ".tasks/f6.json")
    assert refused.returncode != 0 and "changes task files by hand" in refused.stdout + refused.stderr
