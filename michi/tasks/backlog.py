"""Why there is no ready task: counts that tell an agent's loop whether to wait or to stop.

`next` and `next --claim` answer `no_ready_task` both when all work is finished and when the remaining
work is blocked, claimed by other agents, in review or waiting; the counts tell them apart, and `open: 0`
is the one signal that all work is finished (ADR 0007). What only a person can mend (`stuck`: a file
that cannot be read, a task waiting on one no file holds, one no name can finish, tasks that depend on
each other, a `wait` that is no date, a status that says finished while michi_state says open, and the
tasks waiting on one of these) is open work too, never finished work, and `open == stuck` tells the loop
to stop and call a person rather than wait for ever.
"""

from __future__ import annotations

from typing import Any

from michi.tasks.cycles import cycles
from michi.tasks.domains import domain_of
from michi.tasks.errors import NoReadyTask
from michi.tasks.index import Index
from michi.tasks.links import still_open
from michi.tasks.model import OPEN_STATES, OPEN_STATUSES, Task, bad_holds, held_until_later

COUNTS = (
    "open",
    "blocked",
    "claimed",
    "mine",
    "review",
    "waiting",
    "unnamed",
    "missing",
    "cycle",
    "bad_date",
    "mismatch",
    "unreadable",
    "stuck",
)


def counts(index: Index, domain: str | None, agent: str | None, now: float) -> dict[str, int]:
    """Open tasks (michi_state neither done nor deleted) of `domain` (None: every domain), and among them:
    blocked by an open dependency, in progress for another agent (`claimed`) or for `agent` (`mine`), in
    review, `waiting`: held back by a `wait` or `scheduled` date still to come (whatever the status
    says), `unnamed`: another file has both its id and its uuid, so no command can name it and `next
    --claim` never hands it out, or it waits on such an open task (none can finish that one either),
    or `missing`: it waits, itself or through the tasks it depends on, on a task no file holds or none
    can read, or `cycle`: it is in a dependency cycle, or waits on one through the tasks it depends on,
    or `bad_date`: free to take but for a `wait` or `scheduled` that is no date, which holds it back for
    good (`model.HOLDS`), or `mismatch`: free to take but for a status that says
    completed or deleted (`model.split`), so it is never handed out. A task waiting on a `bad_date` or
    `mismatch` task, itself or through the tasks it depends on, counts there too: only a person frees it.
    A task can count in more than one of these, but in only one of `blocked`, `missing`, `cycle` and
    waiting on a stuck task. Task files that cannot be read count as open and `unreadable`: one may hold
    unfinished work. `stuck`: what only a person can mend (unnamed, missing, cycle, bad_date, mismatch,
    unreadable)."""
    out = dict.fromkeys(COUNTS, 0)
    twice = index.uuid_twice
    lost, cycled, held = _doomed(index, now)
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
        if task.extra and held_until_later(task.extra, now):
            out["waiting"] += 1
        behind = held.get(task.uuid)  # the count of the stuck task it waits on
        if task.uuid in lost:
            out["missing"] += 1
        elif task.uuid in cycled:
            out["cycle"] += 1
        elif behind is None and any(_open(index, dep) for dep in task.depends):
            out["blocked"] += 1
        unnamed = twice and _unnamed(index, task)
        out["unnamed"] += unnamed or behind == "unnamed"
        kind = _stuck_kind(task, now)
        out["bad_date"] += kind == "bad_date" or behind == "bad_date"
        out["mismatch"] += kind == "mismatch" or behind == "mismatch"
        out["stuck"] += bool(unnamed or task.uuid in lost or task.uuid in cycled or kind or behind)
    unreadable = sum(1 for path in index.problems if domain is None or domain_of(path) == domain)
    for key in ("open", "unreadable", "stuck"):
        out[key] += unreadable
    return out


def _stuck_kind(task: Task, now: float) -> str | None:
    """Why an open task free to take is never handed out until a person mends it: `mismatch`, its status
    says it is finished, or `bad_date`, a `wait` or `scheduled` that is no date; None for the rest. A task
    someone holds is not stuck: a michi change to it (`done`) writes a status that goes with its state."""
    if not _free(task, now):
        return None
    if task.status not in OPEN_STATUSES:
        return "mismatch"
    if task.extra and bad_holds(task.extra):
        return "bad_date"
    return None


def _unnamed(index: Index, task: Task) -> bool:
    """Another file has both its id and its uuid: no command can name the task, so none can finish it."""
    return len(index.uuid_paths.get(task.uuid, ())) > 1 and len(index.paths_with_id(task.id)) > 1


def _open(index: Index, uuid: str) -> bool:
    path = index.by_uuid.get(uuid)
    other = index.tasks.get(path) if path else None
    return other is None or still_open(other.state)  # a missing dependency never resolves


def _free(task: Task, now: float) -> bool:
    """Waiting for no one but its dependencies: to do, or in progress under a claim that ran out."""
    if task.state == "in_progress":
        return bool(task.assignee) and task.claim_holder(now) is None
    return task.state == "todo"


def _doomed(index: Index, now: float) -> tuple[set[str], set[str], dict[str, str]]:
    """Uuids of the free tasks that never get ready until a person mends their dependencies: those that
    wait on a dependency no task file holds (or none can read), and those in a cycle of free tasks that
    depend on each other (`michi doctor` names both), each directly or through other free tasks: a missing
    dependency blocks (ADR 0007), and no task of a cycle can start first. Then those that wait so on an
    open task that is stuck itself (`_stuck_kind`, or `unnamed` whoever holds it), with its kind: else
    they count as `blocked`, and the loop would ask again for ever. Tasks held by someone pass nothing
    else on: their holder can still finish them (and so break a cycle). One pass over the tasks, and
    Tarjan's over the free ones that depend on something."""
    tasks, by_uuid, twice = index.tasks, index.by_uuid, index.uuid_twice
    awaiting: dict[str, list[str]] = {}  # uuid -> the free tasks that depend on it
    depends: dict[str, tuple[str, ...]] = {}  # free task -> its dependencies
    found: list[str] = []
    stuck: dict[str, list[str]] = {}  # kind -> the free tasks that depend on a stuck task of that kind
    for task in tasks.values():
        if not task.depends or not _free(task, now):
            continue
        depends[task.uuid] = task.depends
        for dep in task.depends:
            path = by_uuid.get(dep)
            other = tasks.get(path) if path is not None else None
            if other is None:
                found.append(task.uuid)
                continue
            awaiting.setdefault(dep, []).append(task.uuid)
            kind = None
            if other.state in OPEN_STATES:
                kind = "unnamed" if twice and _unnamed(index, other) else _stuck_kind(other, now)
            if kind is not None:
                stuck.setdefault(kind, []).append(task.uuid)
    lost = _behind(found, awaiting)
    cycled = _behind([u for group in cycles(depends) for u in group], awaiting) if depends else set()
    held: dict[str, str] = {}
    for kind in sorted(stuck):
        for uuid in _behind(stuck[kind], awaiting) - lost - cycled:
            held.setdefault(uuid, kind)
    return lost, cycled, held


def _behind(found: list[str], awaiting: dict[str, list[str]]) -> set[str]:
    """`found` and every free task that waits on one of them, directly or through other free tasks."""
    reached: set[str] = set()
    while found:  # iterative: a chain of 10,000 dependencies is no recursion limit
        uuid = found.pop()
        if uuid not in reached:
            reached.add(uuid)
            found.extend(awaiting.get(uuid, ()))
    return reached


def no_ready(index: Index, domain: str | None, agent: str | None, now: float) -> NoReadyTask:
    """The one `no_ready_task` error of `next` and `next --claim`: the same message, counts and hint."""
    n: dict[str, Any] = counts(index, domain, agent, now)
    where = "" if domain in (None, ".") else f" in domain {domain}"
    if n["open"] == 0:
        # Counted in one domain: work left in others must not read as "all work is finished".
        elsewhere = counts(index, None, agent, now)["open"] if domain is not None else 0
        if elsewhere:
            return NoReadyTask(
                f"no ready task: the work of domain {domain} is finished (open: 0); {elsewhere} open in "
                "other domains",
                hint="stop here, or take work from every domain with 'michi task next --claim --all'",
                **n,
            )
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
    ("waiting", "waiting for a wait or scheduled date"),
    ("unnamed", "sharing id and uuid with another file, or waiting on such a task"),
    ("missing", "waiting on a task that does not exist or cannot be read"),
    ("cycle", "in or waiting on a dependency cycle"),
    ("bad_date", "held back by a wait or scheduled that is no date, or waiting on such a task"),
    ("mismatch", "held back by a status of completed or deleted, or waiting on such a task"),
    ("unreadable", "task file(s) that could not be read"),
)


def _hint(n: dict[str, int]) -> str:
    if n["stuck"] == n["open"]:
        return (
            f"what is left needs a person ({_stuck(n)}): stop and tell one; 'michi doctor' names each "
            "problem and its fix"
        )
    besides = f"; {n['stuck']} need a person first ('michi doctor')" if n["stuck"] else ""
    if n["mine"]:
        return "finish your own claims first ('michi task list --assignee NAME'), then ask again" + besides
    if n["claimed"] or n["blocked"]:
        return (
            "work remains but others hold it: ask again in a minute ('michi task next --claim'); "
            "stop only when open is 0" + besides
        )
    if n["review"]:
        return (
            "the rest waits for review: 'michi task done ID' or 'michi task start ID' moves it on" + besides
        )
    return "the rest is waiting or not claimable: see 'michi task list'; stop only when open is 0" + besides


def _stuck(n: dict[str, int]) -> str:
    said = {
        "unreadable": f"{n['unreadable']} task file(s) could not be read",
        "missing": f"{n['missing']} task(s) wait on a task that does not exist or cannot be read",
        "unnamed": f"{n['unnamed']} task(s) share their id and uuid with other files, or wait on one",
        "cycle": f"{n['cycle']} task(s) depend on each other in a cycle, or wait on one: a person must mend "
        "the dependencies",
        "bad_date": f"{n['bad_date']} task(s) have a wait or scheduled that is no date, or wait on one",
        "mismatch": f"{n['mismatch']} task(s) have a status of completed or deleted while michi_state says "
        "open, or wait on one",
    }
    return "; ".join(text for key, text in said.items() if n[key])
