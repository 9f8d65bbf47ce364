from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import Remote, git, run_michi

from michi import __version__


def test_version(cli, tmp_path: Path) -> None:
    result = cli(tmp_path, "--version")
    assert result.exit_code == 0
    assert __version__ in result.stdout


def test_unknown_command_is_usage_error_in_json(cli, tmp_path: Path) -> None:
    result = cli(tmp_path, "no-such-verb", "--json")
    assert result.exit_code == 2
    assert result.json()["error"]["code"] == "usage"


def test_help_exits_zero_and_lists_exit_codes(tmp_path: Path) -> None:
    result = run_michi(tmp_path, "--help")
    assert result.exit_code == 0
    assert "75 lock busy" in result.stdout.replace("\n", " ").replace("  ", " ")


def test_json_mode_answers_in_json_even_without_a_subcommand(cli, tmp_path: Path) -> None:
    for group in ("task", "lock", "hook"):
        result = cli(tmp_path, group, "--json")
        assert result.exit_code == 2
        assert result.json()["error"]["code"] == "usage"


def test_json_version(cli, tmp_path: Path) -> None:
    result = cli(tmp_path, "--json", "--version")
    assert result.exit_code == 0 and result.json()["version"] == __version__


def test_a_domain_inside_a_nested_git_folder_is_refused(cli, repo: Path) -> None:
    (repo / "sub" / ".git").mkdir(parents=True)
    result = cli(repo, "task", "add", "x", "--domain", "sub/.git", "--json")
    assert result.exit_code == 2
    assert result.json()["error"]["code"] == "bad_domain"


def test_agent_and_json_may_follow_the_verb() -> None:
    from michi.cli.main import split_json_flag

    assert split_json_flag(["task", "claim", "3", "--agent", "bot", "--json"]) == (
        ["--agent", "bot", "task", "claim", "3"],
        True,
    )
    assert split_json_flag(["lock", "run", "--", "tool", "--agent", "x", "--json"]) == (
        ["lock", "run", "--", "tool", "--agent", "x", "--json"],
        False,
    )


@pytest.mark.parametrize("closed", [0, 1, 2], ids=["stdin", "stdout", "stderr"])
def test_a_closed_standard_stream_drops_that_output_and_keeps_the_exit_code(
    remote: Remote, closed: int
) -> None:
    """A caller that closed stdin, stdout or stderr (`>&-`) gets the command's own exit code: a change that
    landed says 0 (an agent reading 1 would repeat it), and it lands once; the output is dropped."""
    work = remote.clone("work")
    assert run_michi(work, "init").exit_code == 0

    def run(*args: str) -> int:
        cmd = [sys.executable, "-m", "michi", *args]
        return subprocess.run(cmd, cwd=work, preexec_fn=lambda: os.close(closed), timeout=60).returncode

    assert run("--json", "task", "add", "landed once") == 0
    assert run("--json", "task", "list") == 0
    assert run("task", "show", "1") == 0
    assert run("task", "show", "99") == 3  # not found: its own code, not a crash's
    listed = run_michi(work, "--json", "task", "list").json()
    assert [t["description"] for t in listed] == ["landed once"]
    assert git(remote.bare, "log", "--format=%s", "main").count("michi: task add 1") == 1


def test_a_command_lock_run_cannot_start_is_refused_with_a_hint(cli, repo: Path) -> None:
    for argv, status in ((["/no/such/tool"], 127), (["README.md"], 127), (["echo hi"], 127)):
        result = cli(repo, "--json", "lock", "run", "--", *argv)
        assert result.exit_code == status, result.stdout
        error = result.json()["error"]
        assert error["code"] == "command_failed" and error.get("hint"), error


def _michi_errors() -> dict[str, type]:
    import importlib
    import pkgutil

    import michi
    from michi.errors import MichiError

    for info in pkgutil.walk_packages(michi.__path__, "michi."):
        if info.name != "michi.__main__" and not info.name.startswith("michi.mcp"):
            importlib.import_module(info.name)
    found: dict[str, type] = {}
    todo = [MichiError]
    while todo:
        klass = todo.pop()
        found[klass.__name__] = klass
        todo += klass.__subclasses__()
    return found


def test_every_error_michi_raises_carries_a_hint() -> None:
    """An agent reads `error.hint` for what to do next: a raise that names none relies on its class's
    default, and a class without one is a hole in the contract (ADR 0012)."""
    import ast

    errors = _michi_errors()
    missing = []
    for path in sorted(Path(__file__).resolve().parent.parent.joinpath("michi").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if not (isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call)):
                continue
            func = node.exc.func
            name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
            klass = errors.get(name)
            keywords = {k.arg for k in node.exc.keywords}
            if klass is None or "hint" in keywords or None in keywords or klass.default_hint:
                continue
            missing.append(f"{path.name}:{node.lineno} {name}")
    assert not missing, missing


def test_changing_commands_run_in_one_process_leave_no_descriptor_open(cli, repo: Path) -> None:
    """An MCP server (or any caller of michi in-process) runs command after command: each transaction must
    give back what it opened (a lock's guard file was kept open by every one)."""
    assert cli(repo, "init").exit_code == 0
    assert cli(repo, "task", "add", "warm up").exit_code == 0
    before = len(os.listdir("/proc/self/fd"))
    for n in range(5):
        assert cli(repo, "task", "add", f"task {n}").exit_code == 0
    assert cli(repo, "task", "done", "2").exit_code == 0
    assert len(os.listdir("/proc/self/fd")) == before
