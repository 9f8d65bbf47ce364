"""Apply functions over the pool of tasks: `next --claim` and `reap` (seed 004's dead-agent cleanup)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from michi.tasks import backlog, claims
from michi.tasks.domains import domain_of
from michi.tasks.index import Index
from michi.tasks.model import Task
from michi.tasks.mutations import fresh_index, written
from michi.tasks.query import is_ready, ready_order, ready_order_since
from michi.workflow.mutation import ApplyContext, Change, TaskTree

# The ranking `prerank` made before the lock, in this process: (its index, domain, when, ranking).
# Another process replaying the operation (ADR 0004) has none and ranks the fresh tree whole; so does
# this one when the ranking is older than FRESH seconds (a long wait for the lock, a long-lived process).
Ranked = tuple[Index, str | None, float, list[tuple[str, Task, float]]]
_ranked: Ranked | None = None
FRESH = 60.0


def prerank(index: Index, domain: str | None, now: float) -> None:
    """Rank the ready tasks before the lock, so that inside it `next_claim` re-ranks only what the fresh
    tree changed (ADR 0015). Its choice is the most urgent task when the command started, re-checked
    ready and unclaimed on the fresh tree (a task that only the passing of those moments made ready, a
    claim expiring, waits for the next call)."""
    global _ranked
    _ranked = (index, domain, now, ready_order(index, domain, now))


def next_claim(tree: TaskTree, params: Mapping[str, Any], ctx: ApplyContext) -> Change:
    """Claim the most urgent ready task of the fresh tree; a retry after a lost race picks the next one."""
    agent = claims.require_agent(ctx.agent)
    index = fresh_index(tree, ctx)
    domain = params.get("domain")
    global _ranked
    order, when = None, ctx.now
    if _ranked is not None:
        before, where, when, ranked = _ranked
        if where == domain and 0 <= ctx.now - when <= FRESH:
            order = ready_order_since(before, ranked, index, domain, ctx.now)
    reused = order is not None
    if order is None:
        order, when = ready_order(index, domain, ctx.now), ctx.now
    _ranked = (index, domain, when, order)  # a retry after a lost race starts from this ranking
    for path, task, score in order:
        if reused and not is_ready(task, index, ctx.now):  # ranked a moment ago: re-check
            continue
        claimed = claims.claim(task, agent, float(params["ttl"]), ctx.now)
        change = written(f"task claim {task.id}", [(path, claimed)])
        return replace(change, result=[{**r, "urgency": score} for r in change.result])
    raise backlog.no_ready(index, params.get("domain"), agent, ctx.now)


def reap(tree: TaskTree, params: Mapping[str, Any], ctx: ApplyContext) -> Change:
    index = fresh_index(tree, ctx)
    domain = params.get("domain")
    pairs = [
        (path, claims.reap(task, ctx.now))
        for path, task in sorted(index.tasks.items(), key=lambda pt: pt[1].id)
        if claims.expired(task, ctx.now) and (domain is None or domain_of(path) == domain)
    ]
    if not pairs:
        return Change("task reap (nothing expired)", result=[])
    return written(f"task reap {len(pairs)}", pairs)
