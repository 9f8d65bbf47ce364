"""`michi status` at its edges (ADR 0013): tasks only a person can mend, a force-push's dropped changes in
the view for people, and polls that ask git nothing while neither tip moved.

- `status --check` said healthy (exit 0) over open tasks no agent can ever take (`no_ready_task`'s
  `stuck`: a status that says finished, a dependency no file holds, a cycle, a wait that is no date); it
  now reports them by kind under the bit of a corrupt task file (64), counted as `next` counts them.
- A task waiting on an `unnamed` one (no command can name, so finish, it) counted as `blocked`, and
  `next` told the agent's loop to ask again for ever: it is stuck, as the unnamed task is.
- Plain `status` left out `pending.dropped`, which `--json` and `--check` show.
- With unpushed commits of the user's on the task branch, every status ran `git rev-list` and `git log`.
"""

from __future__ import annotations

import json
import os
import shutil
import uuid
from pathlib import Path

from conftest import Remote, git, run_michi


def _files(work: Path) -> dict[int, Path]:
    """Task id -> its file."""
    return {json.loads(p.read_text())["michi_id"]: p for p in work.glob("**/.tasks/*/*.json")}


def _edit(path: Path, **fields: object) -> None:
    path.write_text(json.dumps({**json.loads(path.read_text()), **fields}))


def _push_hand_edits(work: Path) -> None:
    git(work, "add", "-A")
    git(work, "commit", "-q", "--no-verify", "-m", "hand edits")
    git(work, "push", "-q", "origin", "main")


def _stuck_lines(work: Path) -> tuple[int, dict[str, int]]:
    checked = run_michi(work, "--json", "status", "--check")
    lines = json.loads(checked.stdout)
    assert all(p["code"] == "stuck_task" for p in lines), lines
    return checked.exit_code, {p["kind"]: p["count"] for p in lines}


def _no_ready(work: Path) -> dict[str, int]:
    got = run_michi(work, "--json", "--agent", "a1", "task", "next", "--claim", "--all")
    assert got.exit_code == 3, got.stdout + got.stderr
    return dict(json.loads(got.stdout)["error"])


def test_the_check_reports_open_tasks_only_a_person_can_mend_as_next_counts_them(remote: Remote) -> None:
    work = remote.clone("work")
    assert run_michi(work, "init").exit_code == 0
    for n in range(1, 6):
        assert run_michi(work, "task", "add", f"task {n}").exit_code == 0
    assert run_michi(work, "status", "--check").exit_code == 0
    files = _files(work)
    uuids = {n: json.loads(p.read_text())["uuid"] for n, p in files.items()}
    _edit(files[1], status="completed")  # mismatch: michi_state still says todo
    _edit(files[2], depends=[str(uuid.uuid4())])  # missing: no file holds it
    _edit(files[3], depends=[uuids[4]])  # cycle
    _edit(files[4], depends=[uuids[3]])
    _edit(files[5], wait="next tuesday")  # bad_date
    _push_hand_edits(work)

    code, kinds = _stuck_lines(work)
    assert code == 64, kinds  # a person must mend them: the bit of the corrupt file, also stuck
    assert kinds == {"mismatch": 1, "missing": 1, "cycle": 2, "bad_date": 1}
    counts = _no_ready(work)
    assert counts["open"] == counts["stuck"] == 5, counts  # `next` tells the loop to stop
    assert {k: counts[k] for k in kinds} == kinds
    human = run_michi(work, "status", "--check")
    assert human.exit_code == 64 and human.stdout.count("stuck_task: ") == 4, human.stdout
    assert "michi doctor" in human.stdout


def test_a_task_waiting_on_one_no_command_can_name_is_stuck_not_blocked(remote: Remote) -> None:
    work = remote.clone("work")
    assert run_michi(work, "init").exit_code == 0
    assert run_michi(work, "task", "add", "the dependency").exit_code == 0
    assert run_michi(work, "task", "add", "waits on it", "--depends", "1").exit_code == 0
    (work / "copy").mkdir()
    shutil.copytree(work / ".tasks", work / "copy" / ".tasks")  # a project folder copied with its tasks
    _files(work / "copy")[2].unlink()  # task 1 is now in two files, with one id and one uuid
    _push_hand_edits(work)

    counts = _no_ready(work)
    assert (counts["blocked"], counts["unnamed"], counts["stuck"], counts["open"]) == (0, 3, 3, 3), counts
    assert _stuck_lines(work) == (64, {"unnamed": 3})


def _rewound_and_held(remote: Remote) -> tuple[Path, str]:
    """A clone whose landed `task add 2` a force-push dropped, and whose branch still holds it under a
    commit of the user's that michi cannot replay (it edits the dropped task's file)."""
    work = remote.clone("work")
    for args in (["init"], ["task", "add", "kept"], ["task", "add", "dropped one"]):
        assert run_michi(work, *args).exit_code == 0
    dropped = remote.head()
    git(remote.bare, "update-ref", "refs/heads/main", "main~1")  # `git push --force` of main~1
    _edit(_files(work)[2], description="edited by hand")
    git(work, "commit", "-q", "--no-verify", "-am", "my hand edit")
    assert run_michi(work, "task", "add", "after").exit_code == 0  # names the dropped change, once
    return work, dropped


def test_plain_status_shows_the_changes_a_force_push_dropped(remote: Remote) -> None:
    work, dropped = _rewound_and_held(remote)
    assert [d["commit"] for d in run_michi(work, "--json", "status").json()["pending"]["dropped"]] == [
        dropped
    ]

    shown = run_michi(work, "status", env={"COLUMNS": "400"})

    assert shown.exit_code == 0, shown.stderr
    [line] = [line for line in shown.stdout.splitlines() if line.startswith("dropped")]
    assert dropped[:10] in line and "`task add 2`" in line and "git rebase -i origin/main" in line, line


def _git_logged(tmp_path: Path) -> tuple[dict[str, str], Path]:
    """An environment whose `git` writes each of its command lines to a file, then runs the real one."""
    real = shutil.which("git")
    assert real is not None
    folder, log = tmp_path / "bin", tmp_path / "git-calls"
    folder.mkdir()
    wrapper = folder / "git"
    wrapper.write_text(f'#!/bin/sh\necho "$*" >> "{log}"\nexec "{real}" "$@"\n')
    wrapper.chmod(0o755)
    return {"PATH": f"{folder}{os.pathsep}{os.environ['PATH']}"}, log


def _polled(work: Path, env: dict[str, str], log: Path) -> tuple[dict, list[str]]:
    log.write_text("")
    got = run_michi(work, "--json", "status", env=env)
    assert got.exit_code == 0, got.stderr
    return got.json(), log.read_text().splitlines()


def test_repeated_status_asks_git_nothing_while_neither_tip_moved(remote: Remote, tmp_path: Path) -> None:
    work = remote.clone("work")
    assert run_michi(work, "init").exit_code == 0
    assert run_michi(work, "task", "add", "a").exit_code == 0
    (work / "notes.txt").write_text("mine\n")
    git(work, "add", "notes.txt")
    git(work, "commit", "-q", "-m", "my own unpushed commit")
    env, log = _git_logged(tmp_path)

    first, _ = _polled(work, env, log)
    again, calls = _polled(work, env, log)
    assert calls == [], calls  # a monitor's poll: no git process while nothing moved
    tips = ("local", "remote_tip", "ahead", "behind")
    assert [again["sync"][k] for k in tips] == [first["sync"][k] for k in tips]
    assert (again["sync"]["ahead"], again["sync"]["behind"]) == (1, 0)
    assert again["pending"] == first["pending"] and again["pending"]["count"] == 0

    git(work, "commit", "-q", "--allow-empty", "-m", "another of mine")  # the local tip moved
    moved, calls = _polled(work, env, log)
    assert calls, "a moved tip is asked of git again"
    assert (moved["sync"]["ahead"], moved["sync"]["behind"]) == (2, 0)
    _, calls = _polled(work, env, log)
    assert calls == [], calls
