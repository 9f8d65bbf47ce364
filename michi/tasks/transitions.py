"""The one table of allowed state changes (seed 004's workflow: todo, in_progress, review, done, deleted).

An action not allowed from the task's current state is a conflict (exit 4) naming that state.
"""

from __future__ import annotations

from michi.tasks.errors import InvalidTransition
from michi.tasks.model import STATES, Task, status_for, tw_date

# action -> (states it may start from, state it leads to; None keeps the state)
TABLE: dict[str, tuple[frozenset[str], str | None]] = {
    "start": (frozenset({"todo", "review"}), "in_progress"),
    "stop": (frozenset({"in_progress"}), "todo"),
    "review": (frozenset({"todo", "in_progress"}), "review"),
    "done": (frozenset({"todo", "in_progress", "review"}), "done"),
    "delete": (frozenset({"todo", "in_progress", "review", "done"}), "deleted"),
    "claim": (frozenset({"todo", "in_progress"}), "in_progress"),
    "renew": (frozenset({"in_progress"}), "in_progress"),
    "release": (frozenset({"in_progress"}), "todo"),
    "reap": (frozenset({"in_progress"}), "todo"),
    "modify": (frozenset({"todo", "in_progress", "review", "done"}), None),
    "annotate": (frozenset(STATES), None),
}


def check(task: Task, action: str) -> str:
    """The state `action` leads to from `task`'s state, or InvalidTransition."""
    allowed, target = TABLE[action]
    if task.state not in allowed:
        raise InvalidTransition(
            f"cannot {action} task {task.id}: it is {task.state}",
            hint=f"{action} is allowed from {', '.join(s for s in STATES if s in allowed)}",
            id=task.id,
            state=task.state,
        )
    return task.state if target is None else target


def move(task: Task, action: str, now: float) -> Task:
    """Apply `action`'s state change with the Taskwarrior dates that go with it (start, end)."""
    state = check(task, action)
    if state == task.state and action in ("modify", "annotate"):
        return _ended(task.evolve(now), now)
    start = task.start
    if state == "in_progress":
        start = start or tw_date(now)
    elif state in ("todo", "review"):
        start = None
    end = tw_date(now) if state in ("done", "deleted") else None
    keeps_claim = state == "in_progress"
    return task.evolve(
        now,
        state=state,
        status=status_for(state, task.status),
        start=start if state != "done" else task.start,
        end=end,
        claim_expires=task.claim_expires if keeps_claim else None,
        assignee=task.assignee if state in ("in_progress", "review", "done") else None,
    )


def _ended(task: Task, now: float) -> Task:
    """`task` with the `end` its status calls for, as Taskwarrior keeps it (its import and `modify
    status:pending` drop an open task's end, and give a finished one without an end one). `evolve` may
    have mended a status a hand edit split from the state (ADR 0007): a task Taskwarrior completed that
    michi_state calls open kept that completion's end when an annotation made it pending again."""
    finished = task.status in ("completed", "deleted")
    end = (task.end or tw_date(now)) if finished else None
    return task if end == task.end else task.replace(end=end)
