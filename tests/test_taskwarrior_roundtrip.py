"""michi export -> Taskwarrior 2.6 `task import`, `task export` -> michi import: nothing lost, no id changed.

Uses the real `task` binary with TASKDATA/TASKRC in the test's temp dir; skipped without it unless
MICHI_REQUIRE_TASKWARRIOR=1 (CI), where a missing binary fails.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import git

TASK = shutil.which("task")


@pytest.fixture
def tw(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    if TASK is None:
        if os.environ.get("MICHI_REQUIRE_TASKWARRIOR") == "1":
            pytest.fail("Taskwarrior's 'task' binary is required (MICHI_REQUIRE_TASKWARRIOR=1)")
        pytest.skip("Taskwarrior's 'task' binary is not installed")
    data = tmp_path / "twdata"
    data.mkdir()
    rc = tmp_path / "taskrc"
    rc.write_text(f"data.location={data}\nconfirmation=off\njson.array=on\nverbose=nothing\nhooks=off\n")
    env = {**os.environ, "TASKDATA": str(data), "TASKRC": str(rc)}

    def run(*args: str) -> str:
        proc = subprocess.run([TASK, *args], capture_output=True, text=True, env=env, timeout=60)
        assert proc.returncode == 0, proc.stderr
        return proc.stdout

    return run


def _populate(cli, repo: Path) -> None:
    assert cli(repo, "init").exit_code == 0
    (repo / "libs" / "auth" / ".tasks").mkdir(parents=True)
    cli(repo, "task", "add", 'quote " and ü', "-p", "H", "-t", "a", "-t", "b", "--project", "p.sub")
    cli(repo, "task", "add", "in a domain", "--domain", "libs/auth", "--depends", "1")
    cli(repo, "task", "annotate", "1", "a note")
    cli(repo, "--agent", "bot", "task", "claim", "2")
    cli(repo, "task", "add", "finished")
    cli(repo, "task", "done", "3")
    cli(repo, "task", "add", "gone")
    cli(repo, "task", "delete", "4")


def test_round_trip_loses_nothing(cli, repo: Path, remote, tw, tmp_path: Path) -> None:
    _populate(cli, repo)
    exported = cli(repo, "export", "--all")
    assert exported.exit_code == 0
    (tmp_path / "michi.json").write_text(exported.stdout)
    tw("import", str(tmp_path / "michi.json"))
    (tmp_path / "back.json").write_text(tw("export"))
    before = remote.head()
    back = cli(repo, "import", str(tmp_path / "back.json"), "--json").json()
    assert (back["added"], back["modified"], back["problems"]) == ([], [], [])
    assert sorted(back["skipped"]) == [1, 2, 3, 4]
    assert remote.head() == before  # nothing changed, so nothing was committed
    again = cli(repo, "export", "--all").stdout
    assert again == exported.stdout


def test_changes_made_in_taskwarrior_come_back(cli, repo: Path, remote, tw, tmp_path: Path) -> None:
    _populate(cli, repo)
    (tmp_path / "michi.json").write_text(cli(repo, "export", "--all").stdout)
    tw("import", str(tmp_path / "michi.json"))
    uuid1 = cli(repo, "task", "show", "1", "--json").json()["uuid"]
    tw(uuid1, "modify", "+fromtw")
    tw("add", "born in taskwarrior", "priority:L")
    (tmp_path / "back.json").write_text(tw("export"))
    report = cli(repo, "import", str(tmp_path / "back.json"), "--json").json()
    assert report["modified"] == [1] and report["added"] == [5]
    one = cli(repo, "task", "show", "1", "--json").json()
    assert one["tags"] == ["a", "b", "fromtw"] and one["id"] == 1 and one["version"] == 3
    five = cli(repo, "task", "show", "5", "--json").json()
    assert (five["description"], five["priority"], five["domain"]) == ("born in taskwarrior", "L", ".")
    assert "import 2 tasks" in git(remote.bare, "log", "-1", "--format=%s", "main")
