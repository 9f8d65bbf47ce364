"""Why there is no ready task: counts that tell an agent's loop whether to wait or to stop.

`next` and `next --claim` answer `no_ready_task` both when all work is finished and when the remaining
work is blocked, claimed by other agents, in review or waiting; the counts tell them apart, and `open: 0`
is the one signal that all work is finished (ADR 0007).
"""

from __future__ import annotations

from typing import Any

from michi.tasks.domains import domain_of
from michi.tasks.errors import NoReadyTask
from michi.tasks.index import Index
from michi.tasks.model import OPEN_STATES

COUNTS = ("open", "blocked", "claimed", "mine", "review", "waiting", "unnamed")


def counts(index: Index, domain: str | None, agent: str | None, now: float) -> dict[str, int]:
    """Open tasks (neither done nor deleted) of `domain` (None: every domain), and among them: blocked by
    an open dependency, in progress for another agent (`claimed`) or for `agent` (`mine`), in review,
    waiting (Taskwarrior's status), or `unnamed`: another file has both its id and its uuid, so no command
    can name it and `next --claim` never hands it out. A task can count in more than one of these."""
    out = dict.fromkeys(COUNTS, 0)
    twice = index.uuid_twice
    for path, task in index.tasks.items():
        if task.state not in OPEN_STATES or (domain is not None and domain_of(path) != domain):
            continue
        out["open"] += 1
        if task.state == "review":
            out["review"] += 1
        elif task.state == "in_progress":
            holder = task.claim_holder(now)
            if holder is not None and holder == agent:
                out["mine"] += 1
            elif holder is not None or not task.assignee:  # a live claim, or started by hand
                out["claimed"] += 1
        if task.status == "waiting":
            out["waiting"] += 1
        if any(_open(index, dep) for dep in task.depends):
            out["blocked"] += 1
        if twice and len(index.uuid_paths.get(task.uuid, ())) > 1 and len(index.paths_with_id(task.id)) > 1:
            out["unnamed"] += 1
    return out


def _open(index: Index, uuid: str) -> bool:
    path = index.by_uuid.get(uuid)
    other = index.tasks.get(path) if path else None
    return other is None or other.state not in ("done", "deleted")  # a missing dependency never resolves


def no_ready(index: Index, domain: str | None, agent: str | None, now: float) -> NoReadyTask:
    """The one `no_ready_task` error of `next` and `next --claim`: the same message, counts and hint."""
    n: dict[str, Any] = counts(index, domain, agent, now)
    where = "" if domain in (None, ".") else f" in domain {domain}"
    if n["open"] == 0:
        return NoReadyTask(
            f"no ready task: all work is finished{where} (open: 0)",
            hint="stop: nothing is left to do (add tasks with 'michi task add' to continue)",
            **n,
        )
    parts = [f"{n[k]} {label}" for k, label in _LABELS if n[k]]
    message = f"no ready task{where}: {n['open']} open ({', '.join(parts) or 'none claimable'})"
    return NoReadyTask(message, hint=_hint(n), **n)


_LABELS = (
    ("mine", "claimed by you"),
    ("claimed", "claimed by other agents"),
    ("blocked", "blocked by open dependencies"),
    ("review", "in review"),
    ("waiting", "waiting"),
    ("unnamed", "sharing id and uuid with another file"),
)


def _hint(n: dict[str, int]) -> str:
    if n["mine"]:
        return "finish your own claims first ('michi task list --assignee NAME'), then ask again"
    if n["claimed"] or n["blocked"]:
        return (
            "work remains but others hold it: ask again in a minute ('michi task next --claim'); "
            "stop only when open is 0"
        )
    if n["unnamed"] and n["unnamed"] == n["open"]:
        return "what is left shares its id and uuid with other files: a person must fix them ('michi doctor')"
    if n["review"]:
        return "the rest waits for review: 'michi task done ID' or 'michi task start ID' moves it on"
    return "the rest is waiting or not claimable: see 'michi task list'; stop only when open is 0"
