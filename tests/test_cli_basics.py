from __future__ import annotations

from pathlib import Path

from conftest import run_michi

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
