"""Open tasks that depend on each other can never start: `task modify` refuses to close such a cycle, and
`michi doctor` names one that a hand edit or an import brought in."""

from __future__ import annotations

import json
import random

from conftest import Remote, git

from michi.tasks.cycles import cycles


def _naive(depends: dict[str, list[str]]) -> list[list[str]]:
    """The groups by plain reachability: u and v share a group when each reaches the other."""

    def reach(start: str) -> set[str]:
        seen: set[str] = set()
        todo = list(depends[start])
        while todo:
            node = todo.pop()
            if node in depends and node not in seen:
                seen.add(node)
                todo.extend(depends[node])
        return seen

    reached = {u: reach(u) for u in depends}
    groups = {
        tuple(sorted(v for v in depends if v in reached[u] and u in reached[v]))
        for u in depends
        if u in reached[u]
    }
    return sorted(list(g) for g in groups)


def test_the_cycles_found_are_the_groups_that_reach_each_other() -> None:
    for seed in range(300):
        rng = random.Random(seed)
        n = rng.randint(1, 12)
        # Some dependencies name tasks that are not open (not in the mapping): they never count.
        depends = {str(i): [str(rng.randrange(n + 2)) for _ in range(rng.randint(0, 3))] for i in range(n)}
        assert cycles(depends) == _naive(depends), (seed, depends)


def test_a_long_chain_closed_into_one_cycle_is_one_group() -> None:
    chain = {str(i): [str(i + 1)] for i in range(50_000)} | {"50000": ["0"]}
    (group,) = cycles(chain)
    assert len(group) == 50_001


def test_doctor_names_a_cycle_a_hand_edit_brought_in(cli, remote: Remote) -> None:
    work = remote.clone("work")
    assert cli(work, "init").exit_code == 0
    for name in ("a", "b", "c"):
        assert cli(work, "task", "add", name).exit_code == 0
    assert cli(work, "task", "modify", "2", "--depends", "1").exit_code == 0
    assert cli(work, "task", "modify", "1", "--depends", "2").exit_code == 2  # refused: dependency_cycle
    assert cli(work, "--json", "doctor").json()["ok"] is True
    records = {}
    for path in (work / ".tasks").glob("*/*.json"):
        record = json.loads(path.read_text())
        records[record["michi_id"]] = (path, record)
    path, record = records[1]
    record["depends"] = [records[2][1]["uuid"]]  # by hand: 1 -> 2 -> 1
    path.write_text(json.dumps(record, indent=2) + "\n")
    git(work, "commit", "-qam", "hand edit")
    git(work, "push", "-q", "origin", "main")
    report = cli(work, "--json", "doctor").json()
    assert report["ok"] is False
    (problem,) = report["problems"]
    assert problem["ids"] == [1, 2]
    assert "depend on each other" in problem["problem"]
    human = cli(work, "doctor")
    assert "tasks 1, 2 depend on each other" in human.stdout + human.stderr


def test_a_task_cannot_depend_on_itself_and_a_modify_that_changes_nothing_commits_nothing(
    cli, remote: Remote
) -> None:
    """`--depends` naming the task itself is the shortest cycle: refused, not dropped in silence with a new
    version. A modify that changes nothing makes no commit: a new version would fail others' --if-version."""
    work = remote.clone("work")
    assert cli(work, "init").exit_code == 0
    assert cli(work, "task", "add", "a", "-t", "x").exit_code == 0
    assert cli(work, "task", "add", "b").exit_code == 0
    assert cli(work, "task", "modify", "1", "--depends", "2").exit_code == 0
    before = remote.head()
    own = cli(work, "task", "modify", "1", "--depends", "1", "--json")
    assert own.exit_code == 2 and own.json()["error"]["code"] == "dependency_cycle", own.stdout
    for args in (
        ("-t", "x"),
        ("--depends", "2"),
        ("--remove-depends", "2", "--depends", "2"),
        ("--project", ""),
    ):
        same = cli(work, "task", "modify", "1", *args, "--json")
        assert same.exit_code == 0, (args, same.stdout)
        assert same.json()["version"] == 2 and same.json()["depends"] == [2], args
    assert remote.head() == before
    assert cli(work, "task", "modify", "1", "-t", "y", "--json").json()["version"] == 3


def test_doctor_names_the_task_file_that_used_up_the_ids(cli, remote: Remote) -> None:
    """A hand-made task file may hold the highest id there is: `task add` then refuses, "see michi
    doctor", and doctor must name that file (it said "no problems")."""
    work = remote.clone("work")
    assert cli(work, "init").exit_code == 0
    uuid = "0e4ab0a8-3c59-4d7e-9d2c-3b0d0f7a1c11"
    record = {"uuid": uuid, "michi_id": 999_999_999, "description": "last", "status": "pending",
              "entry": "20250101T000000Z"}  # fmt: skip
    (work / ".tasks" / f"{uuid}.json").write_text(json.dumps(record))
    git(work, "add", ".tasks")
    git(work, "commit", "-qm", "a hand-made task", "--no-verify")
    git(work, "push", "-q", "origin", "main")
    added = cli(work, "task", "add", "one more", "--json")
    assert added.exit_code == 4 and "doctor" in added.json()["error"]["hint"], added.stdout
    report = cli(work, "--json", "doctor").json()
    assert report["ok"] is False, report
    assert any(f".tasks/{uuid}.json" in str(p) and "no task ids" in p["problem"] for p in report["problems"])


def test_the_cycle_check_reads_only_the_tasks_it_reaches_on_the_fresh_tree(
    cli, remote: Remote, monkeypatch
) -> None:
    """Inside the lock, `modify --depends` walks from the new dependency through the fresh tree, each
    task found by a block of the id map: reading every task there (seconds at 50,000) held the lock for
    all of it. Fresh still means fresh: the other half of the cycle, pushed by another clone after this
    one's last sync, is seen and the modify refused."""
    from michi.tasks import mutations

    work, other = remote.clone("work"), remote.clone("other")
    assert cli(work, "init").exit_code == 0
    for name in ("a", "b", "c", "d"):
        assert cli(work, "task", "add", name).exit_code == 0
    assert cli(work, "task", "modify", "3", "--depends", "4").exit_code == 0
    git(other, "pull", "-q")
    assert cli(other, "task", "modify", "2", "--depends", "1").exit_code == 0  # work has not seen it

    def every_task(*_args: object, **_kw: object) -> None:
        raise AssertionError("the cycle check read every task")

    monkeypatch.setattr(mutations, "for_tree", every_task)
    refused = cli(work, "task", "modify", "1", "--depends", "3", "--depends", "2", "--json")
    assert refused.exit_code == 2, refused.stdout
    assert refused.json()["error"]["code"] == "dependency_cycle"
    assert "task 2" in refused.json()["error"]["message"]
    assert cli(work, "task", "modify", "1", "--depends", "3", "--json").exit_code == 0
    assert (
        cli(work, "task", "modify", "4", "--depends", "1", "--json").json()["error"]["code"]
        == "dependency_cycle"
    )
