"""Task states as Taskwarrior 2.6 reads them (ADR 0007, ADR 0014): urgency's *waiting* term follows the
`wait` date, never the `waiting` status, also in `list`'s cached rows as the clock moves; `list` shows
blocked exactly what `next` holds back for an open dependency (michi_state decides, also for a status a
hand edit split from it); a change that mends such a status leaves the `end` that goes with it.

Real git (a bare remote and a clone, conftest) and the real `task` binary (`twkit`: skipped without it
unless MICHI_REQUIRE_TASKWARRIOR=1)."""

from __future__ import annotations

import json
import time
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import CliResult, git
from twkit import taskwarrior

from michi.commands import task_common, task_read
from michi.session import Session
from michi.tasks.index import CACHE_NAME
from michi.tasks.model import tw_date
from michi.tasks.query import urgencies

DAY = 86400.0


@pytest.fixture
def work(cli: Callable[..., CliResult], repo: Path) -> Path:
    assert cli(repo, "init").exit_code == 0
    return repo


def _import(cli: Callable[..., CliResult], repo: Path, tmp_path: Path, records: list[dict[str, Any]]) -> None:
    source = tmp_path / "import.json"
    source.write_text(json.dumps(records))
    result = cli(repo, "--json", "import", str(source))
    assert result.exit_code == 0, result.stdout + result.stderr


def _hand_edit(repo: Path, ident: int, **fields: Any) -> None:
    """Set fields of task `ident`'s file by hand (None removes one), committed and pushed past the hook."""
    for path in (repo / ".tasks").glob("*/*.json"):
        record = json.loads(path.read_text())
        if record["michi_id"] == ident:
            record.update(fields)
            record = {k: v for k, v in record.items() if v is not None}
            path.write_text(json.dumps(record, indent=2) + "\n")
            break
    else:
        raise AssertionError(f"no task {ident}")
    git(repo, "commit", "-qam", f"hand edit of task {ident}", "--no-verify")
    git(repo, "push", "-q", "origin", "main")


def _listed(cli: Callable[..., CliResult], repo: Path) -> list[str]:
    result = cli(repo, "--json", "task", "list", "--state", "any")
    assert result.exit_code == 0, result.stderr
    return [t["description"] for t in result.json()]


# 1. waiting is a `wait` date still to come (Taskwarrior 2.6's `Task::is_waiting`), not a status


def test_urgency_reads_waiting_from_the_wait_date_as_taskwarrior(cli, work: Path, tmp_path: Path) -> None:
    now = time.time()

    def record(name: str, status: str, age_days: float, **more: Any) -> dict[str, Any]:
        entry = tw_date(now - age_days * DAY)
        uuid = f"00000000-0000-4000-8000-{name:0>12}"
        return {
            "uuid": uuid,
            "description": name,
            "status": status,
            "entry": entry,
            "modified": entry,
            **more,
        }

    records = [
        record("a1", "waiting", 20, wait=tw_date(now - 3600)),  # its wait passed: no waiting term
        record("b2", "pending", 30, wait=tw_date(now + 5 * DAY)),  # waiting by its date: -3
        record("c3", "pending", 5),
        record("d4", "waiting", 40),  # no wait at all (michi's layout, `laidrow`): no waiting term
        record("e5", "waiting", 50, wait=tw_date(now + 5 * DAY)),
    ]
    _import(cli, work, tmp_path, records)
    tw = taskwarrior(tmp_path)
    (tmp_path / "michi.json").write_text(cli(work, "export", "--all").stdout)
    tw("import", str(tmp_path / "michi.json"))
    theirs = {str(t["description"]): float(t["urgency"]) for t in json.loads(tw("export"))}
    index = task_common.read(Session(cwd=work)).index
    scores = urgencies(index, time.time())
    ours = {task.description: scores[task.uuid] for task in index.tasks.values()}
    assert ours == pytest.approx(theirs, abs=0.01)
    assert theirs["b2"] < 0 < theirs["a1"]  # the two cases that differed
    by_theirs = sorted(theirs, key=lambda name: -theirs[name])
    for name in (CACHE_NAME, task_common.LIST_CACHE):  # a cold list (`coldtable`, `laidrow`), then a warm one
        (work / ".git" / "michi" / name).unlink(missing_ok=True)
    assert _listed(cli, work) == by_theirs
    assert _listed(cli, work) == by_theirs


def test_list_s_cached_rows_follow_a_wait_date_as_time_passes(
    cli, work: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A wait date is read at `now`, not cached as a term: the same cached rows, two days later, no longer
    rank the task as waiting (a new `list` reads no task file: nothing changed on the branch)."""
    now = time.time()
    older, newer = tw_date(now - 10 * DAY), tw_date(now - DAY)
    deferred = {"description": "deferred a day", "status": "waiting", "wait": tw_date(now + DAY)}
    plain = {"description": "plain", "status": "pending"}
    records = [
        {"uuid": "00000000-0000-4000-8000-00000000000a", "entry": older, "modified": older, **deferred},
        {"uuid": "00000000-0000-4000-8000-00000000000b", "entry": newer, "modified": newer, **plain},
    ]
    _import(cli, work, tmp_path, records)
    assert _listed(cli, work) == ["plain", "deferred a day"]
    later = types.SimpleNamespace(time=lambda: now + 2 * DAY)
    monkeypatch.setattr(task_read, "time", later)
    assert _listed(cli, work) == ["deferred a day", "plain"]


# 2. `list`'s blocked is what `next` holds back: one notion of a dependency still open


def test_list_shows_blocked_what_next_holds_back_behind_a_split_status(cli, work: Path) -> None:
    assert cli(work, "task", "add", "finished in Taskwarrior, open for michi").exit_code == 0
    assert cli(work, "task", "add", "after it", "--depends", "1").exit_code == 0
    _hand_edit(work, 1, status="completed", end="20250102T000000Z")  # michi_state still todo
    held = cli(work, "--json", "--agent", "a1", "task", "next", "--claim")
    assert held.exit_code == 3 and held.json()["error"]["code"] == "no_ready_task", held.stdout
    listed = cli(work, "task", "list")
    assert listed.exit_code == 0 and "1 blocked" in listed.stdout, listed.stdout
    assert "blocked" in cli(work, "task", "show", "2").stdout


def test_list_shows_unblocked_what_next_hands_out_behind_a_split_status(cli, work: Path) -> None:
    assert cli(work, "task", "add", "done for michi, pending by hand").exit_code == 0
    assert cli(work, "task", "add", "after it", "--depends", "1").exit_code == 0
    assert cli(work, "task", "done", "1").exit_code == 0
    _hand_edit(work, 1, status="pending")  # michi_state still done
    listed = cli(work, "task", "list")
    assert listed.exit_code == 0 and "blocked" not in listed.stdout, listed.stdout
    assert "blocked" not in cli(work, "task", "show", "2").stdout
    picked = cli(work, "--json", "--agent", "a1", "task", "next", "--claim")
    assert picked.exit_code == 0 and picked.json()["id"] == 2, picked.stdout


# 3. a change that mends a split status leaves the `end` Taskwarrior keeps with it


@pytest.mark.parametrize("verb", ["annotate", "modify"])
def test_mending_a_completed_status_drops_its_end(cli, work: Path, tmp_path: Path, verb: str) -> None:
    """Taskwarrior keeps no `end` on a pending task (its import and `modify status:pending` drop it)."""
    assert cli(work, "task", "add", "finished in Taskwarrior, open for michi").exit_code == 0
    _hand_edit(work, 1, status="completed", end="20250102T000000Z")
    args = ["note"] if verb == "annotate" else ["-p", "H"]
    assert cli(work, "task", verb, "1", *args).exit_code == 0
    shown = cli(work, "--json", "task", "show", "1").json()
    assert (shown["status"], shown["state"], shown["end"]) == ("pending", "todo", None), shown
    tw = taskwarrior(tmp_path)
    (tmp_path / "michi.json").write_text(cli(work, "export", "--all").stdout)
    tw("import", str(tmp_path / "michi.json"))
    (theirs,) = json.loads(tw("export"))
    assert (theirs["status"], theirs.get("end")) == ("pending", None)


def test_mending_a_pending_status_of_a_finished_task_gives_it_an_end(cli, work: Path) -> None:
    """The reverse: a finished task has an end (Taskwarrior gives one at import to a task without)."""
    assert cli(work, "task", "add", "done for michi, pending by hand").exit_code == 0
    assert cli(work, "task", "done", "1").exit_code == 0
    _hand_edit(work, 1, status="pending", end=None)
    before = time.time()
    assert cli(work, "task", "annotate", "1", "status mended").exit_code == 0
    shown = cli(work, "--json", "task", "show", "1").json()
    assert (shown["status"], shown["state"]) == ("completed", "done"), shown
    assert shown["end"] is not None and shown["end"] >= tw_date(before - 1), shown
