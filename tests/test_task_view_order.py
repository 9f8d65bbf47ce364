"""`task list` order (ADR 0014): most urgent first, as Taskwarrior computes urgency; `--sort` for others;
the JSON array in the same order a person sees. Real git repositories, and the real `task` binary."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from twkit import taskwarrior

from michi.tasks.order import BadSort, arrange, parse
from michi.tasks.table import COLUMNS


@pytest.fixture
def ready(cli, repo: Path) -> Path:
    assert cli(repo, "init").exit_code == 0
    return repo


def ids(cli, where: Path, *args: str) -> list[int]:
    result = cli(where, "task", "list", "--json", *args)
    assert result.exit_code == 0, result.stdout + result.stderr
    return [t["id"] for t in result.json()]


def _varied(cli, repo: Path) -> None:
    """Tasks whose urgencies differ for every reason Taskwarrior has: priority, tags, project,
    annotations, started, blocking and blocked."""
    cli(repo, "task", "add", "plain")  # 1
    cli(repo, "task", "add", "low", "-p", "L")  # 2
    cli(repo, "task", "add", "high", "-p", "H")  # 3
    cli(repo, "task", "add", "tagged and in a project", "-t", "a", "-t", "b", "--project", "p")  # 4
    cli(repo, "task", "add", "waits for 1", "-p", "H", "--depends", "1")  # 5: blocked; 1 is blocking
    cli(repo, "task", "add", "started")  # 6
    cli(repo, "task", "start", "6")
    cli(repo, "task", "add", "medium, annotated", "-p", "M")  # 7
    cli(repo, "task", "annotate", "7", "one")
    cli(repo, "task", "annotate", "7", "two")


def test_most_urgent_first_then_oldest_then_lowest_id(cli, ready: Path) -> None:
    _varied(cli, ready)
    cli(ready, "task", "add", "plain too")  # 8: ties with nothing older but 1? no: 1 is blocking
    # 1: blocking 8 + ... ; 3: H 6; 7: M 3.9 + 0.9 annotations; 6: active 4; 4: 0.9 tags + 1 project;
    # 2: L 1.8; 8: 0; 5: H 6 - blocked 5 = 1.
    assert ids(cli, ready) == [1, 3, 7, 6, 4, 2, 5, 8]
    human = cli(ready, "task", "list", "--no-color")
    rows = [line.split()[0] for line in human.stdout.splitlines()[2:-1]]
    assert rows == ["1", "3", "7", "6", "4", "2", "5", "8"]  # a person sees the agent's order


def test_ties_fall_to_the_oldest_then_the_lowest_id(cli, ready: Path) -> None:
    for name in ("a", "b", "c"):
        cli(ready, "task", "add", name)
    assert ids(cli, ready) == [1, 2, 3]  # same urgency (to three decimals): oldest entry first
    assert ids(cli, ready, "--sort", "-id") == [3, 2, 1]


def test_sort_fields_and_reversal(cli, ready: Path) -> None:
    _varied(cli, ready)
    assert ids(cli, ready, "--sort", "id") == [1, 2, 3, 4, 5, 6, 7]
    assert ids(cli, ready, "--sort=-id") == [7, 6, 5, 4, 3, 2, 1]
    assert ids(cli, ready, "--sort", "-urgency") == [5, 2, 4, 6, 7, 3, 1]
    # priority H first, none last in both directions; ties by urgency (the default order)
    assert ids(cli, ready, "--sort", "priority") == [3, 5, 7, 2, 1, 6, 4]
    assert ids(cli, ready, "--sort", "-priority") == [2, 7, 3, 5, 1, 6, 4]
    assert ids(cli, ready, "--sort", "project,id") == [4, 1, 2, 3, 5, 6, 7]
    assert ids(cli, ready, "--sort", "state,-id") == [7, 5, 4, 3, 2, 1, 6]
    for spec, field, newest_first in (("entry", "entry", False), ("-modified", "modified", True)):
        listed = cli(ready, "task", "list", "--json", "--sort", spec).json()
        stamps = [t[field] for t in listed]  # one-second stamps: ties fall to the default order
        assert stamps == sorted(stamps, reverse=newest_first) and len(listed) == 7
    assert ids(cli, ready, "--ready", "--sort", "id") == [1, 2, 3, 4, 7]
    assert ids(cli, ready, "--ready") == [1, 3, 7, 4, 2]  # --ready reads the index: same order


@pytest.mark.parametrize("spec", ["bogus", "id,nope", "-"])
def test_a_bad_sort_is_a_usage_error(cli, ready: Path, spec: str) -> None:
    result = cli(ready, "task", "list", "--json", "--sort", spec)
    assert result.exit_code == 2
    error = result.json()["error"]
    assert error["code"] == "bad_sort" and "urgency" in error["hint"]


def test_order_follows_changes_made_elsewhere(cli, ready: Path, remote) -> None:
    """A task's urgency depends on others (blocking, blocked): the cached list must not keep stale terms
    when another task changes, even though this one's file did not."""
    cli(ready, "task", "add", "first")
    cli(ready, "task", "add", "second", "-p", "L")
    assert ids(cli, ready) == [2, 1]
    cli(ready, "task", "add", "needs first", "--depends", "1")  # 1 becomes blocking: +8
    assert ids(cli, ready) == [1, 2, 3]
    cli(ready, "task", "done", "1")  # 3 unblocked, 1 gone from the open list
    assert ids(cli, ready) == [2, 3]
    other = remote.clone("other")
    cli(other, "task", "add", "urgent", "-p", "H")
    assert ids(cli, ready, "--fetch") == [4, 2, 3]


def _terms_table(rows: list[tuple[object, ...]]) -> tuple[list[object], ...]:
    return tuple([r[c] for r in rows] for c in range(len(COLUMNS)))


def test_missing_values_come_last_either_way() -> None:
    def row(i: int, prio: str | None, project: str | None) -> tuple[object, ...]:
        values = {"id": i, "priority": prio, "project": project, "state": "todo", "entry": "20250101T000000Z"}
        values["modified"] = values["entry"]
        values.update(fixed=0.0, born=1.0e9, flags=0)
        return tuple(values.get(c) for c in COLUMNS)

    table = _terms_table([row(1, None, "b"), row(2, "L", None), row(3, "H", "a")])
    assert arrange(table, [0, 1, 2], parse("priority"), 1.0e9)[0] == [2, 1, 0]
    assert arrange(table, [0, 1, 2], parse("-priority"), 1.0e9)[0] == [1, 2, 0]
    assert arrange(table, [0, 1, 2], parse("project"), 1.0e9)[0] == [2, 0, 1]
    assert arrange(table, [0, 1, 2], parse("-project"), 1.0e9)[0] == [0, 2, 1]
    with pytest.raises(BadSort):
        parse("urgency,colour")


def test_urgency_order_is_taskwarriors(cli, ready: Path, tmp_path: Path) -> None:
    """The same tasks in Taskwarrior 2.6: `task export` reports the urgencies list orders by."""
    tw = taskwarrior(tmp_path)
    _varied(cli, ready)
    exported = cli(ready, "export", "--all")
    (tmp_path / "michi.json").write_text(exported.stdout)
    tw("import", str(tmp_path / "michi.json"))
    theirs = {t["uuid"]: t["urgency"] for t in json.loads(tw("export"))}
    ours = cli(ready, "task", "list", "--json").json()
    by_urgency = sorted(ours, key=lambda t: -theirs[t["uuid"]])
    assert [t["id"] for t in ours] == [t["id"] for t in by_urgency]
    assert len(set(theirs.values())) == len(ours)  # every urgency differs: the order is Taskwarrior's


PROBE = """
import sys
from michi.cli.main import main
main(sys.argv[1:])
print("rich" in sys.modules, file=sys.stderr)
"""


@pytest.mark.parametrize(
    ("args", "rich"),
    [
        (["--json", "task", "list"], False),
        (["--json", "task", "list", "--sort", "-entry", "--wide", "--no-color"], False),
        (["--json", "task", "show", "1", "--no-color"], False),
        (["task", "list"], True),
    ],
)
def test_rich_is_imported_only_for_people(ready: Path, cli, args: list[str], rich: bool) -> None:
    cli(ready, "task", "add", "one")
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, *args], cwd=ready, capture_output=True, text=True, timeout=120
    )
    assert proc.stderr.strip().splitlines()[-1] == str(rich), proc.stderr


def test_the_default_order_is_urgency_then_entry_then_id_with_many_ties() -> None:
    """Two stable sorts give what sorting (urgency, entry, id, row) tuples gave: random tables in id
    order, ties on every key, duplicate ids, every row or some."""
    import random

    from michi.tasks import urgency

    rng = random.Random(9)
    for _ in range(300):
        n = rng.randint(0, 40)
        ids_ = sorted(rng.randint(1, n // 2 + 1) for _ in range(n))
        rows = []
        for i in ids_:
            entry = rng.choice(["20250101T000000Z", "20250102T000000Z", "20240101T000000Z"])
            values = {"id": i, "state": "todo", "entry": entry, "modified": entry, "flags": 0}
            values.update(fixed=rng.choice([0.0, 1.8, 3.9, 6.0, -3.0]), born=rng.choice([1.0e9, 1.5e9]))
            rows.append(tuple(values.get(c) for c in COLUMNS))
        table = _terms_table(rows)
        picked = sorted(rng.sample(range(n), rng.randint(0, n)))
        for chosen in (list(range(n)), picked):
            scores = urgency.at_many(
                [
                    tuple(table[COLUMNS.index(c)][i] for c in ("fixed", "born", "due", "scheduled", "wait"))
                    for i in chosen
                ],
                2.0e9,
            )
            entries, numbers = table[COLUMNS.index("entry")], table[COLUMNS.index("id")]
            want = sorted(
                zip(
                    [-u for u in scores],
                    [entries[i] for i in chosen],
                    [numbers[i] for i in chosen],
                    chosen,
                    strict=True,
                )
            )
            assert arrange(table, chosen, (), 2.0e9) == ([k[3] for k in want], [-k[0] for k in want])
