"""`michi status --check` sees offline work whose journal is gone (ADR 0013, `offline_unpushed`).

The journal (`.git/michi/journal.json`) names the offline operations `michi sync` will push; deleted, the
work is still there as michi commits on the local task branch that the remote-tracking branch lacks, and
`sync` still finds and pushes them (ADR 0004). A missing journal counts as a damaged one: the health
check must not say healthy while that work may never reach anyone. No network: status reads the refs as
of the last sync.
"""

from __future__ import annotations

import json
from pathlib import Path

from conftest import Remote, git, run_michi


def _check(work: Path) -> tuple[int, list[dict]]:
    result = run_michi(work, "--json", "status", "--check")
    return result.exit_code, json.loads(result.stdout)


def test_offline_work_whose_journal_was_deleted_is_still_offline_unpushed(remote: Remote) -> None:
    work = remote.clone("work")
    assert run_michi(work, "init").exit_code == 0
    (work / "notes.txt").write_text("mine\n")
    git(work, "add", "notes.txt")
    git(work, "commit", "-q", "-m", "my own unpushed commit")  # not michi's: never a problem of status
    assert _check(work) == (0, [])

    assert run_michi(work, "task", "add", "OFFLINE WORK", "--offline").exit_code == 0
    (work / ".git/michi/journal.json").unlink()  # deleted by hand, a cleanup script, a crash of the disk

    code, problems = _check(work)
    assert code == 32, problems
    assert [(p["code"], p["count"]) for p in problems] == [("offline_unpushed", 1)]
    assert "run michi sync" in problems[0]["message"]
    pending = json.loads(run_michi(work, "--json", "status").stdout)["pending"]
    assert [(op["state"], op["command"]) for op in pending["operations"]] == [("stranded", "task add 1")]

    assert run_michi(work, "sync").exit_code == 0  # as the message says: sync finds the work and lands it
    assert git(remote.bare, "log", "-1", "--format=%s", "main") == "michi: task add 1"
    assert _check(work) == (0, [])
