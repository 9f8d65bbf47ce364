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
# Standard modules michi itself keeps off its start-up path (typer may still bring some of them): a config
# parser for a file that sets nothing, random names without uuid or secrets, atomic writes without
# tempfile, the host name without socket, git's SHA-1 without OpenSSL, dates without strptime; and michi's
# own modules for people's output and errors.
LEAN = (
    "tomllib",
    "tempfile",
    "socket",
    "secrets",
    "_strptime",
    "hashlib",
    "michi.cli.views.look",
)
# Runs michi's entry point in a fresh interpreter, then reports the exit code and which of the watched
# modules `main` loaded (what the interpreter's own start-up loaded, e.g. through .pth files, is not michi's).
PROBE = """
import sys
watch = sys.argv.pop(1).split(",")
before = set(sys.modules)
from michi.cli.main import main
code = main(sys.argv[1:])
sys.stdout.flush()
new = sorted(m for m in watch if m in sys.modules and m not in before)
import json
print(json.dumps([code, new]), file=sys.stderr)
"""


def loaded(cwd: Path, *args: str, watch: tuple[str, ...] = HEAVY) -> tuple[int, set[str]]:
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, ",".join(watch), *args], cwd=cwd, capture_output=True, text=True
    )
    code, modules = json.loads(proc.stderr.strip().splitlines()[-1])
    return code, set(modules)


@pytest.fixture
def ready(cli, repo: Path) -> Path:
    assert cli(repo, "init").exit_code == 0
    assert cli(repo, "task", "add", "one").exit_code == 0
    assert cli(repo, "--json", "task", "list").exit_code == 0  # warms the list cache
    return repo


def test_version_and_the_hook_import_nothing_heavy(local_repo: Path) -> None:
    everything = (*HEAVY, *LEAN, "michi.errors", "typing", "json", "dataclasses")
    assert loaded(local_repo, "--version", watch=everything) == (0, set())
    assert loaded(local_repo, "--json", "--version", watch=everything) == (0, set())
    assert loaded(local_repo, "hook", "run", watch=(*HEAVY, *LEAN)) == (0, set())


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


def test_json_task_commands_keep_michis_own_imports_lean(ready: Path) -> None:
    """`michi init` writes a config file of comments: reading it needs no TOML parser."""
    assert "[michi]" in (ready / ".michi.toml").read_text()
    assert loaded(ready, "--json", "task", "list", watch=LEAN) == (0, set())
    assert loaded(ready, "--json", "task", "add", "two", watch=LEAN) == (0, set())
    assert loaded(ready, "--json", "task", "show", "1", watch=LEAN) == (0, set())
    (ready / ".michi.toml").unlink()
    assert loaded(ready, "--json", "task", "list", watch=LEAN) == (0, set())


def test_a_config_that_sets_something_is_parsed(ready: Path) -> None:
    (ready / ".michi.toml").write_text("[michi]\nclaim_ttl = 60\n")
    assert loaded(ready, "--json", "task", "list", watch=("tomllib",)) == (0, {"tomllib"})


def test_people_output_loads_the_look_and_rich(ready: Path) -> None:
    """The control for the tests above: the watched modules do load when their work is done."""
    assert loaded(ready, "task", "list", watch=("rich", "michi.cli.views.look")) == (
        0,
        {"rich", "michi.cli.views.look"},
    )
