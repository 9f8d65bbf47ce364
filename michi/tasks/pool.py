"""Apply functions over the pool of tasks: `next --claim` and `reap` (seed 004's dead-agent cleanup)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from michi.tasks import backlog, claims, rank_cache
from michi.tasks.domains import domain_of
from michi.tasks.index import Index, light
from michi.tasks.model import Task
from michi.tasks.mutations import fresh_index, written
from michi.tasks.query import ready_order
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
    name = None if picked is None else name_of(light(tree, state_dir), picked[0], picked[1])
    if picked is not None and name is None:  # neither its id nor its uuid names it alone: skip it
        index = fresh_index(tree, ctx)
        ready = ((p, t, s) for p, t, s in ready_order(index, domain, ctx.now) if name_of(index, p, t))
        picked = next(ready, None)
        name = None if picked is None else name_of(index, picked[0], picked[1])
    if picked is None or name is None:
        raise backlog.no_ready(fresh_index(tree, ctx), domain, agent, ctx.now)
    path, task, score = picked
    claimed = claims.claim(task, agent, float(params["ttl"]), ctx.now)
    change = written(f"task claim {task.id}", [(path, claimed)])
    return replace(change, result=[{**r, "urgency": score, "name": name} for r in change.result])


def name_of(index: Index, path: str, task: Task) -> str | None:
    """What names the claimed task alone in later commands (ADR 0007): its id, or its uuid when another
    file has the same id (a copied folder, a hand-made file); None when neither does (`doctor` names the
    files): such a task is not handed out, since the agent could never finish it."""
    if len(index.paths_with_id(task.id)) == 1:
        return str(task.id)
    if index.uuid_twice and len(index.uuid_paths.get(task.uuid, [])) > 1:
        return None
    return task.uuid


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
