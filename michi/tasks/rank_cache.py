"""The ranking cache `.git/michi/task-rank.v1` (`michi.tasks.ranking`, ADR 0015): CRC-checked like the
other caches, keyed by the tree it describes, brought to a new tree by its diff, and the one task it
names checked against its file before anyone acts on it."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from michi.tasks import serialization
from michi.tasks.errors import CorruptTask
from michi.tasks.index import for_tree as index_for_tree
from michi.tasks.index import load_checked, save_checked
from michi.tasks.model import Task
from michi.tasks.query import ready_order
from michi.tasks.ranking import SAVE_AFTER, STALE, Ranking, Unusable, build, node_of, uuid_of

if TYPE_CHECKING:
    from collections.abc import Callable

    from michi.tasks.index import Index
    from michi.workflow.mutation import TaskTree

RANK_NAME = "task-rank.v1"
__all__ = ["RANK_NAME", "Unusable", "best", "for_tree", "forget", "pick"]

# The ranking this process last had, by state dir: inside the lock only the fresh commit's diff is applied.
_last: dict[Path, Ranking] = {}


def for_tree(tree: TaskTree, state_dir: Path, now: float, save: bool = True) -> Ranking | None:
    """The ranking of `tree`'s tasks, or None when it cannot be kept (two files share a uuid)."""
    if tree.tree_oid is None:
        return None
    ranking = _last.pop(state_dir, None)
    if ranking is None:
        ranking = Ranking.undump(load_checked(state_dir, RANK_NAME))
    try:
        if ranking is not None and ranking.tree != tree.tree_oid:
            try:
                ranking.advance(tree)
            except Unusable:
                raise
            except Exception:  # the cached tree is gone (gc) or unreadable: build it whole
                ranking = None
        if ranking is None:
            ranking = build(index_for_tree(tree, state_dir), now)
    except Unusable:  # two files share a uuid: a cache file kept would be loaded and re-applied each call
        forget(state_dir)
        return None
    if now < ranking.made or now - ranking.made > STALE:
        ranking.arrange(now)
    if save and ranking.behind >= SAVE_AFTER:
        save_checked(state_dir, RANK_NAME, ranking.dump())
        ranking.behind = 0
    _last[state_dir] = ranking
    return ranking


def pick(
    tree: TaskTree, state_dir: Path, domain: str | None, now: float, save: bool
) -> tuple[str, Task, float] | None:
    """(path, task, urgency) of the most urgent ready task of `tree` at `now`, None when no task is ready.
    The chosen file is read back and must be what the ranking holds for it; when it is not (a cache damaged
    past its checksum), or the ranking cannot be kept, `Unusable` says: rank the tree whole."""
    rank = for_tree(tree, state_dir, now, save)
    if rank is None:
        raise Unusable("no ranking")
    picked = rank.best(domain, now)
    if picked is None:
        return None
    path, score = picked
    data = tree.read(path)
    try:
        task = serialization.loads(data, path) if data is not None else None
    except CorruptTask:
        task = None
    if task is None or node_of(path, task) != rank.node(uuid_of(path)):
        forget(state_dir)  # it lied: never believed again
        raise Unusable(path)
    return path, task, score


def best(
    tree: TaskTree, state_dir: Path, domain: str | None, now: float, save: bool, index: Callable[[], Index]
) -> tuple[str, Task, float] | None:
    """`pick`; when the ranking cannot answer, the first of `index()` (the same tree's) ranked whole."""
    try:
        return pick(tree, state_dir, domain, now, save)
    except Unusable:
        return next(iter(ready_order(index(), domain, now)), None)


def forget(state_dir: Path) -> None:
    """A ranking found wrong is dropped from memory and disk: the next call builds it from the files."""
    _last.pop(state_dir, None)
    (state_dir / RANK_NAME).unlink(missing_ok=True)
