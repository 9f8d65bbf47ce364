"""The settings michi reads from git's config are kept between commands only while their sources are
unchanged (`michi.git.settings`)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import CliResult, git

from michi.git.files import config_fingerprint
from michi.git.plain import child_env
from michi.git.settings import CACHE_NAME, settings
from michi.repo import find_repo


def _counting(values: dict[str, str]) -> tuple[Callable[[], dict[str, str]], list[int]]:
    calls: list[int] = []

    def ask() -> dict[str, str]:
        calls.append(1)
        return dict(values)

    return ask, calls


def test_git_is_asked_again_only_when_a_config_file_changed(repo: Path) -> None:
    paths = find_repo(repo)
    ask, calls = _counting({"user.name": "A"})
    assert settings(paths, ask) == {"user.name": "A"}
    assert settings(paths, ask) == {"user.name": "A"}
    assert len(calls) == 1
    assert (paths.state_dir / CACHE_NAME).exists()
    git(repo, "config", "user.name", "B")
    ask, calls = _counting({"user.name": "B"})
    assert settings(paths, ask) == {"user.name": "B"}
    assert len(calls) == 1


def test_an_include_means_git_is_asked_every_time(repo: Path, isolated_env: Path) -> None:
    (isolated_env / "more.conf").write_text("[user]\n\tname = A\n")
    git(repo, "config", "include.path", str(isolated_env / "more.conf"))
    paths = find_repo(repo)
    ask, calls = _counting({"user.name": "A"})
    settings(paths, ask)
    settings(paths, ask)
    assert len(calls) == 2


def _author(repo: Path) -> str:
    return git(repo, "log", "-1", "--format=%an <%ae>", "origin/main")


@pytest.mark.parametrize("where", ["repository", "included"])
def test_commits_carry_the_identity_configured_now(
    repo: Path,
    isolated_env: Path,
    cli: Callable[..., CliResult],
    monkeypatch: pytest.MonkeyPatch,
    where: str,
) -> None:
    for role in ("AUTHOR", "COMMITTER"):
        for part in ("NAME", "EMAIL"):
            monkeypatch.delenv(f"GIT_{role}_{part}", raising=False)
    included = isolated_env / "identity.conf"
    if where == "included":
        git(repo, "config", "include.path", str(included))

    def name(who: str) -> None:
        if where == "included":
            included.write_text(f"[user]\n\tname = {who}\n\temail = {who}@example.invalid\n")
        else:
            git(repo, "config", "user.name", who)
            git(repo, "config", "user.email", f"{who}@example.invalid")

    name("Ann")
    assert cli(repo, "init").exit_code == 0
    assert cli(repo, "--json", "task", "add", "one").exit_code == 0
    assert _author(repo) == "Ann <Ann@example.invalid>"
    name("Bob")
    assert cli(repo, "--json", "task", "add", "two").exit_code == 0
    assert _author(repo) == "Bob <Bob@example.invalid>"


def _real_git(repo: Path) -> Callable[[], dict[str, str]]:
    return lambda: {"user.name": git(repo, "config", "--get", "user.name")}


@pytest.mark.parametrize("how", ["GIT_CONFIG_COUNT", "GIT_CONFIG_PARAMETERS", "GIT_CONFIG"])
def test_a_file_named_by_the_environment_is_read_again_when_it_changes(
    repo: Path, isolated_env: Path, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    # `git -c include.path=F` (GIT_CONFIG_PARAMETERS), GIT_CONFIG_KEY_n=include.path and GIT_CONFIG=F
    # (read by `git config` itself) make git read a file no config file names: its changes must count.
    extra = isolated_env / "extra.conf"
    extra.write_text("[user]\n\tname = Ann\n")
    if how == "GIT_CONFIG_COUNT":
        for key, value in (("COUNT", "1"), ("KEY_0", "include.path"), ("VALUE_0", str(extra))):
            monkeypatch.setenv(f"GIT_CONFIG_{key}", value)
    elif how == "GIT_CONFIG_PARAMETERS":
        monkeypatch.setenv(how, f"'include.path'='{extra}'")
    else:
        monkeypatch.setenv(how, str(extra))
    paths = find_repo(repo)
    assert settings(paths, _real_git(repo)) == {"user.name": "Ann"}
    extra.write_text("[user]\n\tname = Bob\n")
    assert settings(paths, _real_git(repo)) == {"user.name": "Bob"}


def test_an_empty_global_config_setting_is_no_crash(
    repo: Path, cli: Callable[..., CliResult], monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIT_CONFIG_GLOBAL= (set, empty) names no file for git, which reads no global config then; the
    # empty path must not be read as the current folder.
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", "")
    assert cli(repo, "init").exit_code == 0
    assert cli(repo, "--json", "task", "add", "one").exit_code == 0
    assert cli(repo, "--json", "task", "list").exit_code == 0


def test_an_environment_change_between_calls_changes_the_fingerprint(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The environment is decoded once while unchanged (`michi.git.environ`): a change through os.environ
    # (as the served worker takes its client's) must be seen by the very next call.
    paths = find_repo(repo)
    first = config_fingerprint(paths.git_dir, paths.common_dir)
    monkeypatch.setenv("GIT_CONFIG_SYSTEM", str(repo / "nowhere"))
    second = config_fingerprint(paths.git_dir, paths.common_dir)
    assert first is not None and second is not None and first != second
    monkeypatch.setenv("GIT_CONFIG", str(repo / "nowhere"))
    assert config_fingerprint(paths.git_dir, paths.common_dir) is None


def test_a_git_process_gets_the_environment_as_it_is_now_without_the_lock_token(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("MICHI_TEST_VAR", "one")
    env = child_env()
    assert env["MICHI_TEST_VAR"] == "one"
    env["MICHI_TEST_VAR"] = "changed by a caller"  # each caller gets its own copy
    assert child_env()["MICHI_TEST_VAR"] == "one"
    monkeypatch.setenv("MICHI_TEST_VAR", "two")
    monkeypatch.setenv("MICHI_LOCK_TOKEN", "secret")
    env = child_env({"EXTRA": "x"})
    assert env["MICHI_TEST_VAR"] == "two" and env["EXTRA"] == "x" and "MICHI_LOCK_TOKEN" not in env
    monkeypatch.delenv("MICHI_TEST_VAR")
    assert "MICHI_TEST_VAR" not in child_env()
