"""The command line is built on demand (ADR 0010): only the invoked command, and of a group only the
invoked verb; help and typos still see every command."""

from __future__ import annotations

import importlib
from pathlib import Path

import typer
from typer.main import get_group

from michi.cli.app import COMMANDS


def test_every_registered_command_is_in_the_table() -> None:
    """A module's `register(app)` and the `COMMANDS` line that routes to it must agree, or a command
    would silently vanish from the command line."""
    for module in set(COMMANDS.values()):
        scratch = typer.Typer()
        importlib.import_module(module).register(scratch)
        for name in get_group(scratch).commands:
            assert COMMANDS.get(name) == module, (name, module)


def test_help_lists_every_command_and_verb(cli, local_repo: Path) -> None:
    top = cli(local_repo, "--help")
    assert top.exit_code == 0 and all(f"  {name} " in top.stdout for name in COMMANDS), top.stdout
    task = cli(local_repo, "task", "--help")
    verbs = ("add", "list", "show", "start", "done", "modify", "claim", "next", "reap")
    assert task.exit_code == 0 and all(f"  {verb} " in task.stdout for verb in verbs), task.stdout


def test_typos_are_answered_with_the_closest_name(cli, local_repo: Path) -> None:
    top = cli(local_repo, "--json", "tsk", "list")
    assert top.exit_code == 2 and "Did you mean 'task'" in top.json()["error"]["message"]
    verb = cli(local_repo, "--json", "task", "ad", "x")
    assert verb.exit_code == 2 and "Did you mean 'add'" in verb.json()["error"]["message"]


def test_one_verb_built_leaves_the_others_for_the_next_command(cli, repo: Path) -> None:
    assert cli(repo, "init").exit_code == 0
    assert cli(repo, "--json", "task", "add", "a").exit_code == 0
    listed = cli(repo, "--json", "task", "list")
    assert listed.exit_code == 0 and [t["description"] for t in listed.json()] == ["a"]
    assert "  start " in cli(repo, "task", "--help").stdout
