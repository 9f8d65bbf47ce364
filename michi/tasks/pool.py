"""Apply functions over the pool of tasks: `next --claim` and `reap` (seed 004's dead-agent cleanup)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from michi.tasks import backlog, claims
from michi.tasks.domains import domain_of
from michi.tasks.mutations import fresh_index, written
from michi.tasks.query import ready_order
from michi.workflow.mutation import ApplyContext, Change, TaskTree


def next_claim(tree: TaskTree, params: Mapping[str, Any], ctx: ApplyContext) -> Change:
    """Claim the most urgent ready task of the fresh tree; a retry after a lost race picks the next one."""
    agent = claims.require_agent(ctx.agent)
    index = fresh_index(tree, ctx)
    for path, task, score in ready_order(index, params.get("domain"), ctx.now):
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
