"""`next --claim` ranks before the lock and, inside it, re-ranks only what the fresh tree changed
(ADR 0015): the result must equal ranking the fresh tree whole, whatever the change (claims, done,
deleted, new tasks, new dependencies), at the same moment."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from michi.tasks.index import Index
from michi.tasks.query import ready_order, ready_order_since
from tests.test_task_units import T0, FakeTree, act, add


def _uuid(n: int) -> str:
    return f"00000000-0000-4000-8000-{n:012d}"


def _build(tree: FakeTree, cached: Index | None = None) -> Index:
    index = Index.build(tree, cached)
    index.tasks  # noqa: B018  (built once, as the command does before the lock)
    return index


def _ranks(order: list) -> list[tuple[str, float]]:
    return [(path, round(score, 9)) for path, _task, score in order]


@pytest.mark.parametrize("seed", range(25))
def test_reranking_the_diff_equals_ranking_the_whole_tree(seed: int, tmp_path: Path) -> None:
    rng = random.Random(seed)
    tree = FakeTree()
    made = 0
    for _ in range(30):
        made += 1
        deps = [_uuid(rng.randint(1, made - 1))] if made > 1 and rng.random() < 0.3 else []
        add(tree, tmp_path, f"t{made}", made, priority=rng.choice([None, "H", "M", "L"]), depends=deps)
    before = _build(tree)
    now = T0 + 3600
    order = ready_order(before, None, now)
    for _ in range(rng.randint(1, 6)):  # what other clones did meanwhile
        ref = str(rng.randint(1, made))
        roll = rng.random()
        try:
            if roll < 0.25:
                act(tree, tmp_path, "claim", ref, agent="other", ttl=600)
            elif roll < 0.5:
                act(tree, tmp_path, "done", ref)
            elif roll < 0.6:
                act(tree, tmp_path, "delete", ref)
            else:
                made += 1
                deps = [_uuid(rng.randint(1, made - 1))] if rng.random() < 0.5 else []
                add(tree, tmp_path, f"t{made}", made, priority=rng.choice([None, "H"]), depends=deps)
        except Exception:  # an action the task's state refuses: nothing changed
            continue
    fresh = _build(tree, before)
    assert fresh.since is not None and fresh.since[0] == before.tree
    again = ready_order_since(before, order, fresh, None, now)
    assert again is not None
    assert _ranks(again) == _ranks(ready_order(fresh, None, now))


def test_an_index_built_from_elsewhere_is_ranked_whole(tmp_path: Path) -> None:
    tree = FakeTree()
    add(tree, tmp_path, "one", 1)
    before = _build(tree)
    add(tree, tmp_path, "two", 2)
    unrelated = _build(tree)  # not built from `before`
    assert ready_order_since(before, ready_order(before, None, T0), unrelated, None, T0) is None
