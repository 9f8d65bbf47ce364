"""A large import lands as a handful of commits, one transaction each (ADR 0015)."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import git

from michi.commands import interop


def _records(n: int) -> list[dict[str, object]]:
    return [
        {
            "uuid": f"00000000-0000-4000-8000-{i:012d}",
            "description": f"imported {i}",
            "status": "pending",
            "entry": "20240101T000000Z",
        }
        for i in range(1, n + 1)
    ]


def test_import_in_chunks_lands_every_task_once(cli, repo: Path, remote, monkeypatch) -> None:
    monkeypatch.setattr(interop, "IMPORT_CHUNK", 2)
    assert cli(repo, "init").exit_code == 0
    source = repo.parent / "tw.json"
    source.write_text(json.dumps(_records(5)))
    before = remote.head()
    result = cli(repo, "import", str(source), "--json")
    assert result.exit_code == 0, result.stdout
    body = result.json()
    assert sorted(body["added"]) == [1, 2, 3, 4, 5]
    assert len(body["tasks"]) == 5 and body["transaction"]["pushed"]
    commits = git(remote.bare, "rev-list", f"{before}..main").split()
    assert len(commits) == 3  # 2 + 2 + 1
    listed = cli(repo, "task", "list", "--json").json()
    assert sorted(t["id"] for t in listed) == [1, 2, 3, 4, 5]
    again = cli(repo, "import", str(source), "--json")  # nothing new: every chunk skips its tasks
    assert again.exit_code == 0 and sorted(again.json()["skipped"]) == [1, 2, 3, 4, 5]
    assert git(remote.bare, "rev-list", "--count", f"{before}..main") == "3"
