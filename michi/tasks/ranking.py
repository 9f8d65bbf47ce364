"""The ranking of ready tasks that `next` and `next --claim` pick from, kept in the read cache (ADR 0015).

It holds one small *node* per task file (what readiness and urgency need), the reverse dependencies, and
the tasks that were ready at the moment `made`, sorted by their urgency at that moment; `rank_cache`
keeps it in `.git/michi/` and picks from it. A new tree is brought in by its diff: only the
changed files and their dependency neighbours are re-scored, as the index is (`michi.tasks.index`).

The clock: every urgency term only grows with time (age until its cap, the due ramp; `scheduled` and
`wait` are constant for a ready task: both have passed), and time alone only makes tasks ready (a `wait`
or `scheduled` date passing, a claim expiring), never unready. So the ready tasks at `now` are those
ready at `made` plus the *events* (tasks whose time comes between `made` and `now`), and a task scores at
most `made`'s score plus `SLOPE * (now - made)`. Tasks whose score cannot move (age capped, no due date)
are kept apart: the first of them is the best of them. The others are scanned from the top until no later
one can catch up. A ranking older than `STALE` seconds, or from a later clock, is re-scored whole.
"""

from __future__ import annotations

import marshal
import sys
from bisect import insort
from collections.abc import Iterator
from typing import TYPE_CHECKING, Protocol

from michi.codestamp import stamp
from michi.tasks import links, serialization, urgency
from michi.tasks.domains import domain_of
from michi.tasks.index import PARSED, Index, parsed
from michi.tasks.lanes import Lane
from michi.tasks.model import HOLDS, OPEN_STATUSES, Task, is_tw_date, parse_tw_date

if TYPE_CHECKING:
    from michi.workflow.mutation import TaskTree

# rank/2: the nodes in their own block file (`rank_cache`). A ranking holds urgency terms and readiness
# as this code computes them: another code's is rebuilt.
FORMAT = "rank/2 " + PARSED + "/" + stamp(urgency, links, sys.modules[__name__])
STALE = 3600.0
# The ranking file is rewritten once the tree moved this many task files past it (or after a re-scoring,
# which sets `behind` to it). It holds only the changes since the block file (`rank_cache`), so writing
# it is cheap and every move is kept: the next call re-applies only what is new since.
SAVE_AFTER = 1
# The most any ready task's urgency can gain per second: the age and due ramps' slopes.
SLOPE = (urgency.AGE / urgency.AGE_MAX_DAYS + urgency.DUE * 0.8 / 21.0) / urgency.DAY
ROUNDING = 0.002  # urgency is rounded to three decimals; tiny float steps hide in this

# A node: (path, parses, id, entry, candidate, ready_at, terms, terms when blocking, depends, open, closed).
# `candidate`: pending (or waiting) and todo, or in_progress with an assignee (ready once its claim expires);
# `ready_at`: when its wait, scheduled date and claim let it be ready (-inf: already).
Node = tuple[str, bool, int, str, bool, float, urgency.Terms, urgency.Terms, tuple[str, ...], bool, bool]
# A ranked task's key: (-urgency, entry, id, uuid): ascending is most urgent first.
Ranked = tuple[float, str, int, str]
NEVER = float("inf")


def uuid_of(path: str) -> str:
    return path.rsplit("/", 1)[-1][:-5]


def node_of(path: str, task: Task | None) -> Node:
    if task is None:
        return (path, False, 0, "", False, NEVER, urgency.ZERO, urgency.ZERO, (), False, False)
    ready_at = -NEVER
    for key in HOLDS:  # as query.deferred reads them: one that is no date holds it back for good
        value = task.extra.get(key)
        if value is not None:
            ready_at = max(ready_at, parse_tw_date(value) if is_tw_date(value) else NEVER)
    pending = task.status in OPEN_STATUSES  # `waiting` too: its wait decides (as `query.is_ready`)
    candidate = pending and task.state == "todo"
    if pending and task.state == "in_progress" and task.assignee:
        expires = task.claim_expires_at
        candidate = expires is not None  # a claim without expiry never lets go
        ready_at = max(ready_at, expires if expires is not None else NEVER)
    record = serialization.to_record(task)
    return (
        path,
        True,
        task.id,
        task.entry,
        candidate,
        ready_at,
        urgency.terms(record),
        urgency.terms(record, blocking=True),
        tuple(task.depends),
        links.still_open(task.state),  # what makes its dependencies *blocking*, as `links` says
        not links.still_open(task.state),  # what lets its dependents go (`query.is_ready`)
    )


class Nodes(Protocol):
    """uuid -> marshalled node: a dict, or the cache's block file and the nodes changed since
    (`rank_cache.LazyNodes`), which reads a block only when a node in it is asked for."""

    def get(self, uuid: str, /) -> bytes | None: ...
    def pop(self, uuid: str, default: None, /) -> bytes | None: ...
    def __setitem__(self, uuid: str, raw: bytes, /) -> None: ...
    def __iter__(self) -> Iterator[str]: ...


class Unusable(Exception):
    """The ranking cannot answer (two task files share a uuid, or it was found wrong): the caller ranks
    the tree whole with `query.ready_order`."""


class Ranking:
    """Nodes are kept marshalled (`node` decodes one when asked) and the lists hold uuids, ordered by the
    key `_key` computes from the node: loading the cache at 50,000 tasks builds 100,000 small strings, not
    a million tuples, and a call decodes only the nodes it looks at."""

    def __init__(self, tree: str, made: float, nodes: Nodes, rdeps: dict[str, set[str]]) -> None:
        self.tree, self.made, self.nodes, self.rdeps = tree, made, nodes, rdeps
        # domain -> (uuids whose score cannot move, the others), each most urgent first; then the events
        self.lists: dict[str, tuple[Lane, Lane]] = {}
        self.events: list[tuple[float, str]] = []
        self._decoded: dict[str, Node] = {}
        self.behind = 0  # task files changed since the cache file's tree (SAVE_AFTER)

    def node(self, uuid: str) -> Node | None:
        made = self._decoded.get(uuid)
        if made is None:
            raw = self.nodes.get(uuid)
            if raw is None:
                return None
            made = self._decoded[uuid] = marshal.loads(raw)
        return made

    def _set(self, uuid: str, node: Node | None) -> None:
        self._decoded.pop(uuid, None)
        if node is None:
            self.nodes.pop(uuid, None)
        else:
            self.nodes[uuid] = marshal.dumps(node)

    # -- readiness and score, as query.is_ready and query.ready_order decide them --
    def blocking(self, uuid: str) -> bool:
        return any((n := self.node(d)) is not None and n[9] for d in self.rdeps.get(uuid, ()))

    def _deps_done(self, node: Node) -> bool:
        return all((n := self.node(d)) is not None and n[1] and n[10] for d in node[8])

    def _terms(self, uuid: str, node: Node) -> urgency.Terms:
        return node[7] if self.blocking(uuid) else node[6]

    def _key(self, uuid: str, at: float | None = None) -> Ranked:
        """(-urgency, entry, id, uuid) at `at` (default `made`): ascending is most urgent first."""
        node = self.node(uuid)
        assert node is not None
        return (-urgency.at(self._terms(uuid, node), self.made if at is None else at), node[3], node[2], uuid)

    def _place(self, uuid: str) -> None:
        """Put one task where it belongs at `made` (a ranked list, the events, or nowhere)."""
        where = self._where(uuid)
        if where is not None:
            pair = self.lists.get(where[0])
            if pair is None:
                pair = self.lists[where[0]] = (Lane(self._key), Lane(self._key))
            pair[where[1]].place(uuid)

    def _where(self, uuid: str) -> tuple[str, int] | None:
        """(domain, 1 if its score moves with time else 0): the ranked list one task belongs in at
        `made`, None for none; a task that time will make ready (or re-score) is put among the events."""
        node = self.node(uuid)
        if node is None or not node[1] or not node[4] or not self._deps_done(node):
            return None
        terms = self._terms(uuid, node)
        if node[5] > self.made:
            insort(self.events, (node[5], uuid))
            return None
        if terms[3] is not None and terms[3] > self.made:  # a scheduled date read by one reader only
            insort(self.events, (terms[3], uuid))
        entry, due = terms[1], terms[2]  # an unreadable entry is +inf: no age, ever
        moving = due is not None or (
            entry is not None and (self.made - entry) / urgency.DAY < urgency.AGE_MAX_DAYS
        )
        return domain_of(node[0]), int(moving)

    def arrange(self, now: float) -> None:
        """Every list and event anew, at `now` (a stale ranking, or a clock that went back): each list
        gathered, then sorted once, each task's key computed once (placing 50,000 tasks one by one
        computed ~15 keys a task, 9 s at 50k). Keys are unique (they end with the uuid): the same order."""
        self.made, self.lists, self.events = now, {}, []
        self.behind = SAVE_AFTER
        gathered: dict[str, tuple[list[str], list[str]]] = {}
        for uuid in self.nodes:
            where = self._where(uuid)
            if where is not None:
                gathered.setdefault(where[0], ([], []))[where[1]].append(uuid)
        for domain, pair in gathered.items():
            for ranked in pair:
                ranked.sort(key=self._key)
            self.lists[domain] = (Lane(self._key, pair[0]), Lane(self._key, pair[1]))

    def forget(self, uuids: set[str]) -> None:
        for pair in self.lists.values():
            for lane in pair:
                lane.drop(uuids)
        self.events = [e for e in self.events if e[1] not in uuids]

    # -- bringing a new tree in by its diff --
    def advance(self, tree: TaskTree) -> None:
        """Re-rank what the diff to `tree` can have changed: the changed files, the tasks that depend on
        one of them and those one of them depends on (readiness and the *blocking* term follow links)."""
        assert tree.tree_oid is not None
        delta = tree.changed_task_files(self.tree)
        records = parsed(tree, {p: oid for p, oid in delta.items() if oid is not None})
        touched: set[str] = set()
        for path, oid in sorted(delta.items(), key=lambda po: po[1] is not None):  # removals first
            uuid = uuid_of(path)
            old = self.node(uuid)
            if old is not None and old[0] != path and oid is not None:
                raise Unusable(uuid)
            touched.add(uuid)
            touched.update(self.rdeps.get(uuid, ()))
            if old is not None and old[0] == path:
                touched.update(old[8])
                self._unlink(uuid, old)
                self._set(uuid, None)
            if oid is not None:
                record = records[path][0]
                node = node_of(path, None if record is None else serialization.from_trusted(record))
                self._set(uuid, node)
                touched.update(node[8])
                for dep in node[8]:
                    self.rdeps.setdefault(dep, set()).add(uuid)
        self.tree = tree.tree_oid
        self.behind += len(delta)
        self.forget(touched)
        for uuid in touched:
            self._place(uuid)

    def _unlink(self, uuid: str, node: Node) -> None:
        for dep in node[8]:
            users = self.rdeps.get(dep)
            if users is not None:
                users.discard(uuid)
                if not users:
                    del self.rdeps[dep]

    # -- the answer --
    def best(self, domain: str | None, now: float) -> tuple[str, float] | None:
        """(path, urgency) of the most urgent ready task at `now`, ties to the oldest, then the lowest id."""
        if now < self.made or now - self.made > STALE:
            self.arrange(now)
        reach = SLOPE * (now - self.made) + ROUNDING
        best: Ranked | None = None
        pairs = (
            self.lists.values()
            if domain is None
            else [self.lists.get(domain, (Lane(self._key), Lane(self._key)))]
        )
        for fixed, moving in pairs:
            first = fixed.first()
            if first is not None:  # its score is the same at `now`
                best = self._better(best, first, now)
            for uuid in moving:
                if best is not None and -self._key(uuid)[0] + reach < -best[0]:
                    break  # neither this task nor any after it can catch up by `now`
                best = self._better(best, uuid, now)
        for when, uuid in self.events:
            if when > now:
                break
            node = self.node(uuid)
            if (
                node is not None
                and (domain is None or domain_of(node[0]) == domain)
                and self._ready(node, now)
            ):
                best = self._better(best, uuid, now)
        if best is None:
            return None
        node = self.node(best[3])
        assert node is not None
        return node[0], -best[0]

    def _ready(self, node: Node, now: float) -> bool:
        return node[1] and node[4] and node[5] <= now and self._deps_done(node)

    def _better(self, best: Ranked | None, uuid: str, now: float) -> Ranked:
        mine = self._key(uuid, now)
        return mine if best is None or mine < best else best


def build(index: Index, now: float) -> Ranking:
    """From the full index (a cold start, or a cache that cannot be believed)."""
    nodes: dict[str, bytes] = {}
    rdeps: dict[str, set[str]] = {}
    for path, entry in index.entries.items():
        uuid = uuid_of(path)
        if uuid in nodes:
            raise Unusable(uuid)
        task = serialization.from_trusted(entry[1]) if entry[1] is not None else None
        node = node_of(path, task)
        nodes[uuid] = marshal.dumps(node)
        for dep in node[8]:
            rdeps.setdefault(dep, set()).add(uuid)
    assert index.tree is not None
    ranking = Ranking(index.tree, now, nodes, rdeps)
    ranking.arrange(now)
    return ranking
