"""A domain the file system refuses to look up (a folder name over its 255-byte limit, a path over its
length limit, a NUL byte an import file can hold) is exit 2 `bad_domain` naming it, from `--domain` and
from an imported `michi_domain` alike: never exit 1 with the OSError."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

TOO_LONG = {"name": "a" * 256, "path": "ab/" * 1500, "bytes": "é" * 128}  # 256 bytes in UTF-8


@pytest.fixture
def ready(cli, repo: Path) -> Path:
    assert cli(repo, "init").exit_code == 0
    return repo


@pytest.mark.parametrize("kind", sorted(TOO_LONG))
@pytest.mark.parametrize("verb", [["add", "x"], ["list"], ["next"], ["reap"]])
def test_a_domain_too_long_to_look_up_is_a_bad_domain(cli, ready: Path, kind: str, verb: list[str]) -> None:
    got = cli(ready, "task", *verb, "--domain", TOO_LONG[kind], "--json")
    assert got.exit_code == 2, got.stdout
    error = got.json()["error"]
    assert error["code"] == "bad_domain" and TOO_LONG[kind][:20] in error["message"], error


@pytest.mark.parametrize(
    "domain", [TOO_LONG["name"], TOO_LONG["path"], "a\x00b"], ids=["name", "path", "nul"]
)
def test_an_imported_domain_too_long_to_look_up_is_a_bad_domain(cli, ready: Path, domain: str) -> None:
    record = {
        "uuid": "cccccccc-0000-4000-8000-000000000001",
        "description": "imported",
        "status": "pending",
        "entry": "20250101T000000Z",
        "michi_domain": domain,
    }
    source = ready.parent / "tw.json"
    source.write_text(json.dumps([record]))
    got = cli(ready, "import", str(source), "--json")
    assert got.exit_code == 2, got.stdout
    error = got.json()["error"]
    assert error["code"] == "bad_domain" and "cccccccc-0000-4000-8000-000000000001" in error["message"]
