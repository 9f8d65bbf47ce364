"""The lean paths stay lean (ADR 0010): which heavy packages a fresh `michi` process imports, per command.
No timing here: `python bench/run.py startup` measures; these tests keep the causes out."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from michi import __version__

HEAVY = ("git", "pydantic", "rich", "typer", "psutil")
# Runs michi's entry point in a fresh interpreter, then reports the exit code and the heavy packages loaded.
PROBE = f"""
import json, sys
from michi.cli.main import main
code = main(sys.argv[1:])
sys.stdout.flush()
print(json.dumps([code, sorted(m for m in {HEAVY!r} if m in sys.modules)]), file=sys.stderr)
"""


def loaded(cwd: Path, *args: str) -> tuple[int, set[str]]:
    proc = subprocess.run([sys.executable, "-c", PROBE, *args], cwd=cwd, capture_output=True, text=True)
    code, modules = json.loads(proc.stderr.strip().splitlines()[-1])
    return code, set(modules)


@pytest.fixture
def ready(cli, repo: Path) -> Path:
    assert cli(repo, "init").exit_code == 0
    assert cli(repo, "task", "add", "one").exit_code == 0
    assert cli(repo, "--json", "task", "list").exit_code == 0  # warms the list cache
    return repo


def test_version_and_the_hook_import_nothing_heavy(local_repo: Path) -> None:
    assert loaded(local_repo, "--version") == (0, set())
    assert loaded(local_repo, "--json", "--version") == (0, set())
    assert loaded(local_repo, "hook", "run") == (0, set())


def test_help_builds_no_git(local_repo: Path) -> None:
    for args in (["--help"], ["task", "--help"], ["task", "add", "--help"], ["lock", "--help"]):
        code, modules = loaded(local_repo, *args)
        assert code == 0 and modules <= {"typer"}, (args, modules)


def test_warm_list_and_lock_status_need_neither_git_nor_rich(ready: Path) -> None:
    assert loaded(ready, "--json", "task", "list") == (0, {"typer"})
    assert loaded(ready, "--json", "lock", "status") == (0, {"typer"})


def test_transactions_import_only_typer(ready: Path) -> None:
    """typer 0.29 coerces through pydantic (michi.cli.coerce bypasses it); michi talks to git without
    GitPython and reads its own start time from /proc, without psutil."""
    code, modules = loaded(ready, "--json", "task", "add", "two", "-p", "H", "-t", "a", "--wait", "5")
    assert (code, modules) == (0, {"typer"})
    code, modules = loaded(ready, "--json", "--agent", "bot", "task", "claim", "2", "--ttl", "60")
    assert (code, modules) == (0, {"typer"})


def test_another_spelling_of_version_goes_through_typer(local_repo: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "michi", "-C", ".", "--version"],
        cwd=local_repo,
        capture_output=True,
        text=True,
    )
    assert (proc.returncode, proc.stdout) == (0, f"michi {__version__}\n")
