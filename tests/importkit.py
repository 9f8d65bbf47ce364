"""Taskwarrior records for `michi import` tests, the import of them from a file, and the checks every
refused import shares: exit 2 with one line and a hint, and nothing lands."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from conftest import CliResult, Remote, git

A = "00000000-0000-4000-8000-00000000000a"
B = "00000000-0000-4000-8000-00000000000b"
C = "00000000-0000-4000-8000-00000000000c"
ENTRY = "20240101T000000Z"


def task(uuid: str, *depends: str, **more: object) -> dict[str, object]:
    """A pending Taskwarrior record named after its uuid's last digit, waiting for `depends`."""
    record: dict[str, object] = {
        "uuid": uuid,
        "description": f"task {uuid[-1]}",
        "status": "pending",
        "entry": ENTRY,
    }
    if depends:
        record["depends"] = list(depends)
    return {**record, **more}


def run_import(
    cli: Callable[..., CliResult], repo: Path, records: list[dict[str, object]], *flags: str
) -> CliResult:
    """`michi import FILE FLAGS...` of `records`, written as Taskwarrior's export beside `repo`."""
    source = repo.parent / "tw.json"
    source.write_text(json.dumps(records))
    return cli(repo, "import", str(source), *flags)


def refused(
    cli: Callable[..., CliResult], repo: Path, remote: Remote, records: list[dict[str, object]]
) -> dict[str, Any]:
    """Import `records`, which must be refused whole: exit 2, one line and a hint, the remote and the
    working tree unchanged. Returns the JSON error."""
    before = remote.head()
    result = run_import(cli, repo, records, "--json")
    assert result.exit_code == 2, result.stdout
    error: dict[str, Any] = result.json()["error"]
    assert "\n" not in error["message"] and error["hint"], error
    assert remote.head() == before
    assert git(repo, "status", "--porcelain") == ""
    return error
