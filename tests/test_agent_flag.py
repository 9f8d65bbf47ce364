"""`--agent` may stand anywhere before `--`, but never without its name: a trailing `--agent` (or one
followed by another option, or an empty one) is a usage error, not a command run silently under
MICHI_AGENT's name or none."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def ready(cli, repo: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("MICHI_AGENT", "env-agent")
    assert cli(repo, "init").exit_code == 0
    assert cli(repo, "task", "add", "x").exit_code == 0
    return repo


@pytest.mark.parametrize(
    "argv",
    [
        ["task", "claim", "1", "--json", "--agent"],
        ["--json", "task", "claim", "1", "--agent="],
        ["--json", "task", "claim", "1", "--agent", ""],
        ["task", "claim", "1", "--agent", "--json"],
        ["--json", "--agent", "--offline", "task", "claim", "1"],
    ],
    ids=["last", "equals_nothing", "empty", "before_json", "before_an_option"],
)
def test_agent_without_a_name_is_a_usage_error(cli, ready: Path, argv: list[str]) -> None:
    got = cli(ready, *argv)
    assert got.exit_code == 2, got.stdout
    assert got.json()["error"]["code"] in ("usage", "bad_agent"), got.stdout
    shown = cli(ready, "task", "show", "1", "--json").json()
    assert shown["state"] == "todo" and shown["assignee"] is None  # nothing ran as env-agent


def test_agent_with_its_name_after_the_verb_still_works(cli, ready: Path) -> None:
    got = cli(ready, "task", "claim", "1", "--agent", "bot", "--json")
    assert got.exit_code == 0 and got.json()["assignee"] == "bot", got.stdout
