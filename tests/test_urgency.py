"""michi's urgency is Taskwarrior's: the same tasks give the same numbers as the real `task export`.

Uses the real `task` binary (TASKDATA/TASKRC in the test's temp dir); skipped without it unless
MICHI_REQUIRE_TASKWARRIOR=1 (CI), where a missing binary fails.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from twkit import taskwarrior

from michi.commands import task_common
from michi.session import Session
from michi.tasks.query import urgencies


def _taskwarrior_export(tmp_path: Path, michi_export: str) -> list[dict[str, object]]:
    tw = taskwarrior(tmp_path)
    (tmp_path / "michi.json").write_text(michi_export)
    tw("import", str(tmp_path / "michi.json"))
    return list(json.loads(tw("export")))


def test_urgency_equals_taskwarriors_export(cli, repo: Path, tmp_path: Path) -> None:
    assert cli(repo, "init").exit_code == 0
    steps = [
        ("task", "add", "plain"),
        ("task", "add", "high, tagged, in a project", "-p", "H", "-t", "a,b,c", "--project", "p.sub"),
        ("task", "add", "medium with one tag", "-p", "M", "-t", "next"),
        ("task", "add", "low, blocked by 1", "-p", "L", "--depends", "1"),
        ("task", "add", "annotated twice"),
        ("task", "annotate", "5", "one"),
        ("task", "annotate", "5", "two"),
        ("task", "add", "claimed, so active"),
        ("--agent", "bot", "task", "claim", "6"),
        ("task", "add", "finished"),
        ("task", "done", "7"),
    ]
    for step in steps:
        assert cli(repo, *step).exit_code == 0, step
    exported = cli(repo, "export", "--all")
    records = _taskwarrior_export(tmp_path, exported.stdout)
    theirs = {str(t["uuid"]): float(str(t["urgency"])) for t in records}
    ours = urgencies(task_common.read(Session(cwd=repo)).index, time.time())
    assert set(ours) == set(theirs)
    for uuid, value in theirs.items():
        assert ours[uuid] == pytest.approx(value, abs=0.01), uuid
    assert len(set(ours.values())) >= 5  # the cases differ: the comparison is not vacuous
