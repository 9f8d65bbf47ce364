"""`next` and `next --claim` pick from the ranking cache (`michi.tasks.ranking`, ADR 0015): brought to a
new tree by its diff and to a new moment by the bounds on how urgency moves with the clock, its answer
must equal ranking the tree whole (`query.ready_order`) at that moment, whatever changed; a damaged or
lying cache is never believed."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from michi.tasks import blocks, rank_cache, serialization
from michi.tasks.index import Index, load_checked
from michi.tasks.model import Task, tw_date
from michi.tasks.query import ready_order
from tests.conftest import run_michi
from tests.test_task_units import T0, FakeTree

YEAR = 365 * 86400.0


def _uuid(n: int) -> str:
    return f"00000000-0000-4000-8000-{n:012d}"


def _path(n: int, domain: str = ".") -> str:
    return (".tasks/" if domain == "." else f"{domain}/.tasks/") + f"{_uuid(n)}.json"


def _write(tree: FakeTree, n: int, domain: str = ".", **kw: Any) -> None:
    kw.setdefault("entry", tw_date(T0))
    task = Task(uuid=_uuid(n), id=n, description=f"t{n}", modified=kw["entry"], **kw)
    tree.files[_path(n, domain)] = serialization.dumps(task)


def _domain(n: int) -> str:
    return "api" if n % 3 == 0 else "."


def _random_task(rng: random.Random, tree: FakeTree, n: int, now: float, made: int) -> None:
    kw: dict[str, Any] = {
        "priority": rng.choice([None, "H", "M", "L"]),
        "entry": tw_date(now - rng.choice([0, 60, 3600, 86400 * 100, YEAR - 30, YEAR * 2])),
        "tags": tuple(rng.sample(["next", "a", "b"], rng.randint(0, 2))),
    }
    extra: dict[str, Any] = {}
    roll = rng.random()
    if roll < 0.15:
        extra["wait"] = tw_date(now + rng.choice([-100, 30, 400, 5000]))
    elif roll < 0.3:
        extra["scheduled"] = tw_date(now + rng.choice([-100, 30, 400, 5000]))
    if rng.random() < 0.3:
        extra["due"] = tw_date(now + rng.choice([-86400 * 30, -3600, 600, 86400 * 3, 86400 * 60]))
    kw["extra"] = extra
    state = rng.random()
    if state < 0.15:
        expires = tw_date(now + rng.choice([-5, 40, 900]))
        kw.update(state="in_progress", assignee="other", claim_expires=expires)
    elif state < 0.25:
        kw.update(state="done", status="completed", end=kw["entry"])
    elif state < 0.3:
        kw.update(state="deleted", status="deleted", end=kw["entry"])
    elif state < 0.35:
        kw.update(state="review")
    if made > 1 and rng.random() < 0.3:
        kw["depends"] = tuple(_uuid(rng.randint(1, made)) for _ in range(rng.randint(1, 2)))
    _write(tree, n, _domain(n), **kw)


def _expected(tree: FakeTree, domain: str | None, now: float) -> tuple[str, float] | None:
    order = ready_order(Index.build(tree), domain, now)
    return (order[0][0], order[0][2]) if order else None


def _picked(tree: FakeTree, state: Path, domain: str | None, now: float) -> tuple[str, float] | None:
    got = rank_cache.pick(tree, state, domain, now, save=True)
    return None if got is None else (got[0], got[2])


@pytest.mark.parametrize("seed", range(30))
def test_the_ranking_equals_ranking_the_whole_tree_after_any_change_and_any_time(
    seed: int, tmp_path: Path
) -> None:
    rng = random.Random(seed)
    tree = FakeTree()
    made, now = 0, T0
    for _ in range(40):
        made += 1
        _random_task(rng, tree, made, now, made)
    rank_cache._last.clear()
    for _step in range(12):
        for _ in range(rng.randint(0, 5)):  # what this or other clones did meanwhile
            roll = rng.random()
            if roll < 0.6:
                _random_task(rng, tree, rng.randint(1, made), now, made)  # rewrite a task
            elif roll < 0.8:
                made += 1
                _random_task(rng, tree, made, now, made)
            elif roll < 0.9 and tree.files:
                del tree.files[rng.choice(sorted(tree.files))]
            else:
                n = rng.randint(1, made)
                tree.files[_path(n, _domain(n))] = b"{not json"
        now += rng.choice([0, 1, 35, 500, 1000, 4000, -50])
        if rng.random() < 0.3:
            rank_cache._last.clear()  # a new process: from the cache file
        for domain in (None, ".", "api"):
            assert _picked(tree, tmp_path, domain, now) == _expected(tree, domain, now)


def _best(tree: FakeTree, state: Path, now: float) -> tuple[str, float] | None:
    """What `next` answers: the ranking's pick, or the tree ranked whole when it cannot answer."""
    got = rank_cache.best(tree, state, None, now, True, lambda: Index.build(tree))
    return None if got is None else (got[0], got[2])


@pytest.mark.parametrize("seed", range(8))
def test_the_same_with_nodes_in_small_blocks_rewritten_often(
    seed: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The nodes' block file read across many blocks, and its overlay of changed nodes both kept and
    folded into a new block file."""
    monkeypatch.setattr(blocks, "ROWS", 3)
    monkeypatch.setattr(rank_cache, "NODE_REBASE", 4)
    test_the_ranking_equals_ranking_the_whole_tree_after_any_change_and_any_time(seed + 100, tmp_path)


def test_a_damaged_or_foreign_node_file_is_never_believed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(blocks, "ROWS", 2)
    tree = FakeTree()
    for n, priority in enumerate("LHMLM", start=1):
        _write(tree, n, priority=priority)
    assert _picked(tree, tmp_path, None, T0) == (_path(2), 6.0)
    rank = rank_cache.for_tree(tree, tmp_path, T0)
    assert rank is not None
    rank_cache.save(tmp_path, rank)
    nodes = tmp_path / rank_cache.NODES_NAME
    good = nodes.read_bytes()
    for at in range(len(good) - 1, len(good) - 400, -37):  # a byte of some block, each time
        rank_cache._last.clear()
        bad = good[:at] + bytes([good[at] ^ 0x10]) + good[at + 1 :]
        nodes.write_bytes(bad)
        _write(tree, 2, priority="H", status="completed", state="done")
        assert _best(tree, tmp_path, T0 + 1) == _expected(tree, None, T0 + 1)
        _write(tree, 2, priority="H")
        assert _best(tree, tmp_path, T0 + 2) == _expected(tree, None, T0 + 2)
        rank = rank_cache.for_tree(tree, tmp_path, T0 + 2)
        assert rank is not None
        rank_cache.save(tmp_path, rank)
        good = nodes.read_bytes()
    assert not nodes.exists() or nodes.read_bytes() != bad  # the damaged file was dropped
    # A node file of another tree (a concurrent writer's) is not used with this ranking file.
    other = FakeTree()
    _write(other, 9, priority="H")
    rank_cache._last.clear()
    foreign = rank_cache.for_tree(other, tmp_path / "x", T0)
    assert foreign is not None
    rank_cache.save(tmp_path / "x", foreign)
    nodes.write_bytes((tmp_path / "x" / rank_cache.NODES_NAME).read_bytes())
    rank_cache._last.clear()
    assert _best(tree, tmp_path, T0 + 3) == _expected(tree, None, T0 + 3)


def test_ties_among_many_equal_tasks_go_to_the_lowest_id_without_scanning_them(tmp_path: Path) -> None:
    tree = FakeTree()
    for n in range(1, 200):
        _write(tree, n, priority="H", entry=tw_date(T0 - 2 * YEAR))
    assert _picked(tree, tmp_path, None, T0) == (_path(1), 8.0)
    rank = rank_cache.for_tree(tree, tmp_path, T0)
    assert (
        rank is not None and len(list(rank.lists["."][0])) == 199
    )  # all of them in the list that never moves
    _write(tree, 1, priority="H", entry=tw_date(T0 - 2 * YEAR), status="completed", state="done")
    assert _picked(tree, tmp_path, None, T0 + 5) == (_path(2), 8.0)


def test_a_damaged_cache_is_never_believed(tmp_path: Path) -> None:
    tree = FakeTree()
    _write(tree, 1, priority="L")
    _write(tree, 2, priority="H")
    assert _picked(tree, tmp_path, None, T0) == (_path(2), 6.0)
    rank_cache._last.clear()
    cache = tmp_path / rank_cache.RANK_NAME
    raw = bytearray(cache.read_bytes())
    raw[len(raw) // 2] ^= 0xFF
    cache.write_bytes(bytes(raw))
    _write(tree, 3, priority="M")
    assert _picked(tree, tmp_path, None, T0) == (_path(2), 6.0)
    assert load_checked(tmp_path, rank_cache.RANK_NAME) is not None  # rewritten from the files


def test_a_cache_that_lies_past_its_checksum_is_dropped(tmp_path: Path) -> None:
    tree = FakeTree()
    _write(tree, 1, priority="L")
    _write(tree, 2, priority="H")
    rank = rank_cache.for_tree(tree, tmp_path, T0)
    assert rank is not None
    _write(tree, 2, priority="H", status="completed", state="done")  # done behind the cache's back
    rank.tree = tree.tree_oid or ""  # ... and the cache claims to describe that tree
    rank_cache.save(tmp_path, rank)
    rank_cache._last.clear()
    with pytest.raises(rank_cache.Unusable):
        rank_cache.pick(tree, tmp_path, None, T0, save=True)
    assert not (tmp_path / rank_cache.RANK_NAME).exists()
    assert _picked(tree, tmp_path, None, T0) == (_path(1), 1.8)


def test_a_claim_expiring_or_a_wait_ending_makes_a_task_ready_in_time(tmp_path: Path) -> None:
    tree = FakeTree()
    _write(tree, 1, priority="L")
    _write(tree, 2, priority="H", state="in_progress", assignee="a", claim_expires=tw_date(T0 + 100))
    _write(tree, 3, priority="M", extra={"wait": tw_date(T0 + 50)})
    assert _picked(tree, tmp_path, None, T0) == (_path(1), 1.8)
    assert _picked(tree, tmp_path, None, T0 + 60) == (_path(3), 3.9)
    assert _picked(tree, tmp_path, None, T0 + 100)[0] == _path(2)  # type: ignore[index]


def test_two_files_with_one_uuid_are_ranked_whole(tmp_path: Path) -> None:
    tree = FakeTree()
    _write(tree, 1, priority="L")
    _write(tree, 1, "api", priority="H")
    with pytest.raises(rank_cache.Unusable):
        rank_cache.pick(tree, tmp_path, None, T0, save=True)
    best = rank_cache.best(tree, tmp_path, None, T0, True, lambda: Index.build(tree))
    assert best is not None and (best[0], best[2]) == _expected(tree, None, T0)
    assert best[0] == _path(1, "api")  # the H one: the tree ranked whole answers


def test_a_cache_that_cannot_rank_the_tree_is_removed_not_reloaded_each_call(tmp_path: Path) -> None:
    """A second file with a uuid already ranked (a copied folder) makes the cache unusable for that tree:
    it was left on disk, and every call loaded it, re-applied the diff and gave up again."""
    tree = FakeTree()
    _write(tree, 1, priority="L")
    _write(tree, 2, priority="H")
    assert _picked(tree, tmp_path, None, T0) == (_path(2), 6.0)
    assert (tmp_path / rank_cache.RANK_NAME).exists()
    rank_cache._last.clear()
    _write(tree, 1, "api", priority="H")
    assert rank_cache.for_tree(tree, tmp_path, T0) is None
    assert not (tmp_path / rank_cache.RANK_NAME).exists()
    assert rank_cache.for_tree(tree, tmp_path, T0) is None  # built anew, found unusable, nothing kept
    assert not (tmp_path / rank_cache.RANK_NAME).exists()
    del tree.files[_path(1, "api")]  # fixed: ranked and kept again
    assert _picked(tree, tmp_path, None, T0) == (_path(2), 6.0)
    assert load_checked(tmp_path, rank_cache.RANK_NAME) is not None


def test_a_task_whose_due_date_nears_overtakes_one_that_does_not_move(tmp_path: Path) -> None:
    tree = FakeTree()
    old = tw_date(T0 - 2 * YEAR)
    _write(tree, 1, priority="H", entry=old)  # 6 + 2 (age, capped): never moves
    # 2 + 12 * the due ramp: 7.999 at T0, climbing 0.0026 in 500 s
    due = T0 + 14 * 86400 - (5.999 / 12 - 0.2) * 21 / 0.8 * 86400
    _write(tree, 2, entry=old, extra={"due": tw_date(round(due))})
    assert _picked(tree, tmp_path, None, T0) == _expected(tree, None, T0) == (_path(1), 8.0)
    assert _picked(tree, tmp_path, None, T0 + 500) == _expected(tree, None, T0 + 500)
    assert _picked(tree, tmp_path, None, T0 + 500)[0] == _path(2)  # type: ignore[index]


def test_a_task_no_longer_depended_on_stops_blocking(tmp_path: Path) -> None:
    tree = FakeTree()
    old = tw_date(T0 - 2 * YEAR)
    _write(tree, 1, priority="H", entry=old)  # 6 + 2, and 8 more while task 2 depends on it
    _write(tree, 2, entry=old, depends=(_uuid(1),))
    _write(tree, 3, priority="H", project="p", tags=("a", "b"), entry=old)  # 6 + 2 + 1 + 0.9
    assert _picked(tree, tmp_path, None, T0) == (_path(1), 16.0)
    _write(tree, 2, entry=old)
    assert _picked(tree, tmp_path, None, T0) == _expected(tree, None, T0) == (_path(3), 9.9)


def test_next_claim_in_another_process_sees_what_another_clone_did_after_the_ranking(cli, remote) -> None:
    dev = remote.clone("dev")
    cli(dev, "init")
    cli(dev, "task", "add", "low", "-p", "L")
    cli(dev, "task", "add", "middle", "-p", "M")
    agent = remote.clone("agent")
    got = run_michi(agent, "--agent", "a", "task", "next", "--json")
    assert got.exit_code == 0 and got.json()["description"] == "middle"
    assert (agent / ".git" / "michi" / rank_cache.RANK_NAME).exists()  # the ranking is cached
    cli(dev, "task", "add", "urgent", "-p", "H")  # another clone, after that ranking
    cli(dev, "task", "delete", "2")
    got = run_michi(agent, "--agent", "a", "task", "next", "--claim", "--json")
    assert got.exit_code == 0 and got.json()["description"] == "urgent"
    got = run_michi(agent, "--agent", "a", "task", "next", "--claim", "--json")
    assert got.exit_code == 0 and got.json()["description"] == "low"  # not the deleted one
    got = run_michi(agent, "--agent", "a", "task", "next", "--claim", "--json")
    assert got.exit_code != 0 and got.json()["error"]["code"] == "no_ready_task"
