"""The ranking cache `.git/michi/task-rank.v2` (`michi.tasks.ranking`, ADR 0015): CRC-checked like the
other caches, keyed by the tree it describes, brought to a new tree by its diff, and the one task it
names checked against its file before anyone acts on it.

The nodes (one per task file, ~9 MB at 50,000 tasks) sit in a block file of their own
(`task-rank-nodes.v1`, `michi.tasks.blocks`, by uuid, for the tree it names), read a block at a time
when a node is asked for; the ranking file holds the lists, the events, the reverse dependencies and the
nodes changed since that tree. The block file is rewritten once `NODE_REBASE` nodes have changed."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

from michi.tasks import blocks, serialization
from michi.tasks.errors import CorruptTask
from michi.tasks.index import for_tree as index_for_tree
from michi.tasks.index import load_checked, save_checked
from michi.tasks.lanes import Lane
from michi.tasks.model import MAX_TASK_BYTES, Task
from michi.tasks.query import ready_order
from michi.tasks.ranking import FORMAT, SAVE_AFTER, STALE, Ranking, Unusable, build, node_of, uuid_of

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    from michi.tasks.index import Index
    from michi.workflow.mutation import TaskTree

RANK_NAME = "task-rank.v2"
NODES_NAME = "task-rank-nodes.v1"
NODES_FORMAT = "rank-nodes/1"
_OLD_NAME = "task-rank.v1"  # the whole ranking in one file, before the block file: dropped when it is written
NODE_REBASE = 1024  # nodes changed past which the block file is rewritten (the ranking file holds them)
__all__ = ["NODES_NAME", "RANK_NAME", "Unusable", "best", "for_tree", "forget", "pick", "save"]


class LazyNodes:
    """The nodes of the block file's tree (`base`) with `over`, the nodes changed since (None: gone)."""

    def __init__(self, table: blocks.Table, base: str, over: dict[str, bytes | None]) -> None:
        self.table, self.base, self.over = table, base, over

    def get(self, uuid: str, default: None = None, /) -> bytes | None:
        if uuid in self.over:
            return self.over[uuid]
        rows = self.table.find("node", uuid)
        return rows[0][1] if rows else None

    def pop(self, uuid: str, default: None = None, /) -> bytes | None:
        old = self.get(uuid)
        self.over[uuid] = None
        return old

    def __setitem__(self, uuid: str, raw: bytes, /) -> None:
        self.over[uuid] = raw

    def __iter__(self) -> Iterator[str]:
        return (uuid for uuid, _raw in self.items())

    def items(self) -> Iterator[tuple[str, bytes]]:
        """Every node (reads every block)."""
        for uuid, raw in self.table.rows("node"):
            if uuid not in self.over:
                yield uuid, raw
        for uuid, now in self.over.items():
            if now is not None:
                yield uuid, now


def _load(state_dir: Path) -> Ranking | None:
    """The ranking file with the block file it was written against, or None when either is missing,
    damaged, or they do not belong together (written by two processes at once)."""
    try:
        fmt, tree, made, rdeps, lanes, events, base, node_over = load_checked(state_dir, RANK_NAME)
        if fmt != FORMAT or not (isinstance(tree, str) and isinstance(base, str)):
            return None
        if not (isinstance(node_over, dict) and isinstance(lanes, dict) and isinstance(events, list)):
            return None
        table = blocks.Table.open(state_dir / NODES_NAME)
        if table is None or table.head != (NODES_FORMAT, base, made):
            return None
        ranking = Ranking(tree, float(made), LazyNodes(table, base, node_over), {})
        ranking.rdeps = {u: set(users) for u, users in rdeps.items()}
        ranking.events = events
        for domain, pair in lanes.items():
            ranking.lists[domain] = tuple(  # type: ignore[assignment]
                Lane(ranking._key, _rows(table, f"lane {domain} {kind}"), set(dropped), added)
                for kind, (dropped, added) in enumerate(pair)
            )
        return ranking
    except (TypeError, ValueError, AttributeError):  # no file (None), or not this format
        return None


def _rows(table: blocks.Table, name: str) -> Callable[[], Iterator[str]] | None:
    if not table.has(name):
        return None
    return lambda: (row[1] for row in table.rows(name))


def save(state_dir: Path, ranking: Ranking) -> None:
    """The ranking file, with the lists' overlays and the nodes changed since the block file; the block
    file too (every node and list, whole) when those have grown past `NODE_REBASE`, or some of it is
    only in memory (a ranking built or re-scored)."""
    nodes, lanes = ranking.nodes, [lane for pair in ranking.lists.values() for lane in pair]
    kept = (
        isinstance(nodes, LazyNodes)
        and not any(lane.in_memory() for lane in lanes)
        and len(nodes.over) + sum(lane.overlay for lane in lanes) <= NODE_REBASE
    )
    if not kept:
        items = nodes.items() if isinstance(nodes, LazyNodes | dict) else ((u, nodes.get(u)) for u in nodes)
        tables: dict[str, list[tuple[Any, ...]]] = {"node": sorted(items)}
        for domain, pair in ranking.lists.items():
            for kind, lane in enumerate(pair):
                tables[f"lane {domain} {kind}"] = list(enumerate(lane))
        blocks.write(state_dir / NODES_NAME, (NODES_FORMAT, ranking.tree, ranking.made), tables)
        with contextlib.suppress(OSError):
            (state_dir / _OLD_NAME).unlink(missing_ok=True)
        table = blocks.Table.open(state_dir / NODES_NAME)
        if table is None or table.head != (NODES_FORMAT, ranking.tree, ranking.made):
            return  # not written: the next call builds it
        ranking.nodes = LazyNodes(table, ranking.tree, {})
        for domain in ranking.lists:
            ranking.lists[domain] = tuple(  # type: ignore[assignment]
                Lane(ranking._key, _rows(table, f"lane {domain} {kind}")) for kind in (0, 1)
            )
    nodes = ranking.nodes
    assert isinstance(nodes, LazyNodes)
    rdeps = {u: sorted(users) for u, users in ranking.rdeps.items()}
    overlays = {
        d: tuple((sorted(lane.dropped), lane.added) for lane in pair) for d, pair in ranking.lists.items()
    }
    head = (FORMAT, ranking.tree, ranking.made, rdeps, overlays, ranking.events, nodes.base, nodes.over)
    save_checked(state_dir, RANK_NAME, head)


# The ranking this process last had, by state dir: inside the lock only the fresh commit's diff is applied.
_last: dict[Path, Ranking] = {}


def for_tree(tree: TaskTree, state_dir: Path, now: float, save: bool = True) -> Ranking | None:
    """The ranking of `tree`'s tasks, or None when it cannot be kept (two files share a uuid)."""
    if tree.tree_oid is None:
        return None
    ranking = _last.pop(state_dir, None)
    if ranking is None:
        ranking = _load(state_dir)
    try:
        if ranking is not None:
            try:
                if ranking.tree != tree.tree_oid:
                    ranking.advance(tree)
                if now < ranking.made or now - ranking.made > STALE:
                    ranking.arrange(now)
            except Unusable:
                raise
            except Exception:  # the cached tree is gone (gc) or unreadable, a block damaged: build it whole
                ranking = None
        if ranking is None:
            ranking = build(index_for_tree(tree, state_dir), now)
    except Unusable:  # two files share a uuid: a cache file kept would be loaded and re-applied each call
        forget(state_dir)
        return None
    if save and ranking.behind >= SAVE_AFTER:
        _save(state_dir, ranking)
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
    try:
        picked = rank.best(domain, now)
        if picked is None:
            return None
        path, score = picked
        data = tree.read(path, limit=MAX_TASK_BYTES)
        try:
            task = serialization.loads(data, path) if data is not None else None
        except CorruptTask:
            task = None
        if task is None or node_of(path, task) != rank.node(uuid_of(path)):
            raise Unusable(path)
    except (Unusable, blocks.Damaged) as exc:
        forget(state_dir)  # it lied, or a block is damaged: never believed again
        raise Unusable(str(exc)) from exc
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
    (state_dir / NODES_NAME).unlink(missing_ok=True)


def _save(state_dir: Path, ranking: Ranking) -> None:
    try:
        save(state_dir, ranking)
    except blocks.Damaged:  # a block read while rewriting the file is damaged: the next call builds it
        forget(state_dir)
