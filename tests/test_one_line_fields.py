"""A project or a tag is one printable line: a newline, tab, escape or invisible character in one is
refused before the lock (exit 2, one line naming the value), from the command line and from an import.
Blanks around a tag are no part of it (`-t 'a, b'`), as before."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import Remote, git

BAD = ["\n", "a\nb", "x\ty", "\x1b[31mred", "a\u2028b", "\x7f", "a\x00b"]


@pytest.fixture
def ready(cli, repo: Path) -> Path:
    assert cli(repo, "init").exit_code == 0
    assert cli(repo, "task", "add", "a task").exit_code == 0
    return repo


def _refused(result, remote: Remote, before: str) -> None:
    assert result.exit_code == 2, result.stdout
    error = result.json()["error"]
    assert error["code"] == "usage" and "control or invisible" in error["message"], error
    assert "\n" not in error["message"]
    assert remote.head() == before


@pytest.mark.parametrize("bad", BAD)
@pytest.mark.parametrize(
    "args",
    [
        ("task", "add", "x", "--project", "{}"),
        ("task", "add", "x", "-t", "ok,a{}b"),
        ("task", "modify", "1", "--project", "{}"),
        ("task", "modify", "1", "-t", "a{}b"),
    ],
    ids=["add_project", "add_tag", "modify_project", "modify_tag"],
)
def test_a_project_or_tag_that_is_not_one_printable_line_is_refused(
    cli, ready: Path, remote: Remote, args: tuple[str, ...], bad: str
) -> None:
    before = remote.head()
    _refused(cli(ready, "--json", *(a.format(bad) for a in args)), remote, before)
    assert git(ready, "status", "--porcelain") == ""


@pytest.mark.parametrize("field", ["project", "tags"])
def test_an_import_with_such_a_project_or_tag_is_refused(cli, ready: Path, remote: Remote, field) -> None:
    record = {
        "uuid": "00000000-0000-4000-8000-00000000000a",
        "description": "imported",
        "status": "pending",
        "entry": "20240101T000000Z",
        field: "a\nb" if field == "project" else ["ok", "a\x1bb"],
    }
    source = ready.parent / "tw.json"
    source.write_text(json.dumps([record]))
    before = remote.head()
    _refused(cli(ready, "--json", "import", str(source)), remote, before)


def test_printable_unicode_projects_and_tags_still_land(cli, ready: Path) -> None:
    result = cli(ready, "--json", "task", "add", "x", "--project", "日本.語", "-t", "ünï,ç")
    assert result.exit_code == 0, result.stdout
    assert result.json()["project"] == "日本.語" and result.json()["tags"] == ["ünï", "ç"]
