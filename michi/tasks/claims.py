"""Agent claims (seeds 002 and 004): who holds a task, until when; owner-validated renew and release.

These are pure functions of a task and the clock; the transaction engine makes them atomic across clones
by re-running them on the fresh remote state.
"""

from __future__ import annotations

from michi.tasks import transitions
from michi.tasks.errors import AgentRequired, Claimed, NotClaimOwner
from michi.tasks.model import Task, tw_date


def require_agent(agent: str | None) -> str:
    if not agent:
        raise AgentRequired("claims need an agent name", hint="pass --agent NAME or set MICHI_AGENT")
    return agent


def _expiry(now: float, ttl: float) -> str | None:
    return None if ttl == 0 else tw_date(now + ttl)


def refuse_if_claimed(task: Task, agent: str | None, now: float) -> None:
    holder = task.claim_holder(now)
    if holder is not None and holder != agent:
        until = task.claim_expires or "no expiry"
        raise Claimed(
            f"task {task.id} is claimed by {holder} until {until}",
            hint="pick another task, or wait for the claim to expire",
            id=task.id,
            assignee=holder,
            claim_expires=task.claim_expires,
        )


def holds(task: Task, agent: str | None, now: float) -> bool:
    """`agent` holds a live claim on `task` (which a claim put in in_progress)."""
    return agent is not None and task.claim_holder(now) == agent


def claim(task: Task, agent: str, ttl: float, now: float) -> Task:
    refuse_if_claimed(task, agent, now)
    moved = transitions.move(task, "claim", now)
    return moved.replace(assignee=agent, claim_expires=_expiry(now, ttl))


def _own(task: Task, agent: str, action: str) -> None:
    if task.state != "in_progress" or task.assignee != agent:
        holder = task.assignee if task.state == "in_progress" and task.assignee else "nobody"
        raise NotClaimOwner(
            f"cannot {action} task {task.id}: it is claimed by {holder}, not {agent}",
            hint="only the agent holding a claim may renew or release it",
            id=task.id,
            assignee=task.assignee,
        )


def renew(task: Task, agent: str, ttl: float, now: float) -> Task:
    _own(task, agent, "renew")
    return transitions.move(task, "renew", now).replace(claim_expires=_expiry(now, ttl))


def release(task: Task, agent: str, now: float) -> Task:
    _own(task, agent, "release")
    return transitions.move(task, "release", now)


def expired(task: Task, now: float) -> bool:
    return task.state == "in_progress" and bool(task.assignee) and task.claim_holder(now) is None


def reap(task: Task, now: float) -> Task:
    return transitions.move(task, "reap", now)
