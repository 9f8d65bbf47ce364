"""Plain coercion of command-line values (michi.cli.coerce, ADR 0010): the same values typer's own
coercion accepts, the same usage errors (exit 2) for the ones it refuses."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def ready(cli, repo: Path) -> Path:
    assert cli(repo, "init").exit_code == 0
    return repo


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["task", "add", "x", "--wait", "soon"], "'--wait': 'soon' is not a valid number"),
        (["task", "add", "x", "--wait", "-1"], "'--wait': '-1' is not a number >= 0"),
        (["task", "add", "x", "--wait", "nan"], "'--wait': 'nan' is not a number >= 0"),
        (["task", "start", "1", "--if-version", "2.5"], "'--if-version': '2.5' is not a valid integer"),
        (["task", "claim", "1", "--ttl=-3"], "'--ttl': '-3' is not a number >= 0"),
    ],
)
def test_bad_values_are_usage_errors(cli, ready: Path, args: list[str], fragment: str) -> None:
    result = cli(ready, "--json", *args)
    assert result.exit_code == 2, result.stdout
    error = result.json()["error"]
    assert error["code"] == "usage" and fragment in error["message"], error


def test_values_reach_the_command_converted(cli, ready: Path) -> None:
    added = cli(ready, "--json", "task", "add", "x", "--wait", "2.5", "-t", "a", "--tag=b", "-p", "H")
    assert added.exit_code == 0, added.stdout
    assert added.json()["tags"] == ["a", "b"] and added.json()["priority"] == "H"
    started = cli(ready, "--json", "task", "start", "1", "--if-version", "1", "--wait", "0")
    assert started.exit_code == 0 and started.json()["version"] == 2
    stale = cli(ready, "--json", "task", "stop", "1", "--if-version", "1")
    assert stale.exit_code == 4 and stale.json()["error"]["code"] == "version_mismatch"


def test_the_plain_converter_matches_the_declared_type() -> None:
    from michi.cli.coerce import PlainParam

    class Param:
        multiple, nargs = False, 1

    class Many:
        multiple, nargs = True, 1

    assert PlainParam(int, None).coerce("7", Param(), None) == 7
    assert PlainParam(float, 0).coerce("0", Param(), None) == 0.0
    assert PlainParam(Path, None).coerce("a/b", Param(), None) == Path("a/b")
    assert PlainParam(bool, None).coerce("yes", Param(), None) is True
    assert PlainParam(bool, None).coerce(False, Param(), None) is False
    assert PlainParam(str, None).coerce(None, Param(), None) is None
    assert PlainParam(str, None).coerce(None, Many(), None) == ()
    assert PlainParam(str, None).coerce(("a", "b"), Many(), None) == ["a", "b"]
