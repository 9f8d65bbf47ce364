"""`next` counts one domain: work left in another must never read as "all work is finished"."""

from __future__ import annotations

import json

from tests.conftest import Remote, run_michi


def test_next_in_an_empty_domain_names_the_work_left_in_others(remote: Remote) -> None:
    work = remote.clone("work")
    assert run_michi(work, "init").exit_code == 0
    (work / "libs" / "x").mkdir(parents=True)
    assert run_michi(work, "task", "add", "libs task", "--domain", "libs/x").exit_code == 0

    res = run_michi(work, "--json", "--agent", "a", "task", "next", "--claim")

    assert res.exit_code == 3, res.stderr
    error = json.loads(res.stdout)["error"]
    assert error["open"] == 0 and "all work is finished" not in error["message"], error
    assert "1 open in other domains" in error["message"] and "--all" in error["hint"]
    taken = run_michi(work, "--json", "--agent", "a", "task", "next", "--claim", "--all")
    assert taken.exit_code == 0 and json.loads(taken.stdout)["description"] == "libs task"
