"""Apply functions over the pool of tasks: `next --claim` and `reap` (seed 004's dead-agent cleanup)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from michi.tasks import backlog, claims, rank_cache
from michi.tasks.domains import domain_of
from michi.tasks.mutations import fresh_index, written
from michi.workflow.mutation import ApplyContext, Change, TaskTree


def next_claim(tree: TaskTree, params: Mapping[str, Any], ctx: ApplyContext) -> Change:
    """Claim the most urgent ready task of the fresh tree; a retry after a lost race picks the next one.

    The choice comes from the ranking cache (`michi.tasks.rank_cache`, ADR 0015), which the command brought
    to its snapshot before the lock: inside it only the fresh commit's diff is re-ranked. The chosen file
    is read back and must be what the ranking says it is; if not, or when the ranking cannot be kept,
    the fresh tree is ranked whole."""
    agent = claims.require_agent(ctx.agent)
    domain = params.get("domain")
    state_dir = Path(ctx.state_dir)
    picked = rank_cache.best(tree, state_dir, domain, ctx.now, False, lambda: fresh_index(tree, ctx))
    if picked is None:
        raise backlog.no_ready(fresh_index(tree, ctx), domain, agent, ctx.now)
    path, task, score = picked
    claimed = claims.claim(task, agent, float(params["ttl"]), ctx.now)
    change = written(f"task claim {task.id}", [(path, claimed)])
    return replace(change, result=[{**r, "urgency": score} for r in change.result])


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
