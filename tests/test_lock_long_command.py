"""A command line of any length under the lock: the lock's record names the command for people, cut short,
so it stays a record michi reads back (a 100 KB annotation made the holder's own record unreadable, and
every retry lost the lock with exit 75)."""

from __future__ import annotations

import json

from tests.conftest import Remote, git, run_michi


def test_a_long_annotation_lands_and_the_lock_record_stays_small(remote: Remote) -> None:
    work = remote.clone("work")
    assert run_michi(work, "init").exit_code == 0
    assert run_michi(work, "task", "add", "x").exit_code == 0
    note = "n" * 100_000

    res = run_michi(work, "--json", "task", "annotate", "1", note)

    assert res.exit_code == 0, res.stdout[:300] + res.stderr[:300]
    shown = json.loads(run_michi(work, "--json", "task", "show", "1").stdout)
    assert [a["description"] for a in shown["annotations"]] == [note]
    assert git(work, "status", "--porcelain") == ""
    events = (work / ".git" / "michi" / "lock-events.jsonl").read_text().splitlines()
    assert events and all(len(line) < 4096 for line in events)
