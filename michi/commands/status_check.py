"""`michi status --check`: is anything wrong? For cron, CI and monitoring systems (ADR 0013).

Each kind of problem has a bit of the exit status, so a monitor can tell them apart without parsing, and
no combination can be mistaken for one of michi's other exit codes (1-5, 75, 130): 0 means healthy. Tasks
only a person can mend share the bit of a corrupt task file, one of them (no ninth bit fits).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from michi.commands import status as status_cmd
from michi.commands import task_common
from michi.durations import duration
from michi.errors import MichiError
from michi.results import Result
from michi.session import Session

if TYPE_CHECKING:
    from michi.tasks.index import Index

PROBLEM_BITS = {
    "lock_held_too_long": 8,
    "claim_expired": 16,
    "offline_unpushed": 32,
    "corrupt_task_file": 64,
    "reap_failed": 128,
}
# Open tasks no agent can ever take, which only a person can mend (`no_ready_task`'s `stuck`): the bit of
# a corrupt file, which is one of them, with `michi doctor` as the fix of both; no ninth bit fits.
SHARED_BITS = {"stuck_task": PROBLEM_BITS["corrupt_task_file"]}
STUCK = {  # `backlog.counts`' kinds but `unreadable`, which has `corrupt_task_file`'s lines
    "unnamed": "share their id and uuid with another file (no command can name them), or wait on one",
    "missing": "wait on a task that does not exist or cannot be read",
    "cycle": "depend on each other in a cycle, or wait on one",
    "bad_date": "have a wait or scheduled that is no date, or wait on one",
    "mismatch": "have a status of completed or deleted while michi_state says open, or wait on one",
}


@dataclass(frozen=True)
class Limits:
    max_lock_age: float
    max_claim_overdue: float = 0.0
    max_unsynced: float = 0.0


@dataclass(frozen=True)
class CheckReport(Result):
    problems: list[dict[str, Any]]
    reaped: list[dict[str, Any]] | None = None  # with --reap: the claims released
    notes: list[str] = field(default_factory=list)

    @property
    def exit_code(self) -> int:  # type: ignore[override]
        code = 0
        for problem in self.problems:
            code |= PROBLEM_BITS.get(problem["code"]) or SHARED_BITS[problem["code"]]
        return code

    def to_json(self) -> Any:
        return self.problems


def _problem(code: str, message: str, **details: Any) -> dict[str, Any]:
    return {"code": code, "message": message, **details}


def _lock_problems(lock: dict[str, Any], limits: Limits) -> list[dict[str, Any]]:
    age = lock.get("age")
    if not lock["held"] or age is None or age <= limits.max_lock_age:
        return []
    holder = lock.get("holder")
    who = "a holder with no readable record"
    if holder:
        who = f"PID {holder['pid']} on {holder['host']}" + (
            f" (agent {holder['agent']})" if holder["agent"] else ""
        )
        who += f" running {holder['command']!r}"
    state = f"stale: {lock['reason']}" if lock["stale"] else "live"
    message = (
        f"the repo lock has been held by {who} for {duration(age)} "
        f"(limit {duration(limits.max_lock_age)}; {state})"
    )
    return [_problem("lock_held_too_long", message, age=age, holder=holder, stale=lock["stale"])]


def _claim_problems(claims: list[dict[str, Any]], limits: Limits) -> list[dict[str, Any]]:
    out = []
    for claim in claims:
        left = claim["lease_left"]
        if not claim["expired"] or left is None or -left <= limits.max_claim_overdue:
            continue
        message = (
            f"task {claim['id']}: the claim of {claim['agent']} expired {duration(-left)} ago and nobody "
            "reaped it (michi task reap, or status --check --reap)"
        )
        out.append(_problem("claim_expired", message, id=claim["id"], agent=claim["agent"], overdue=-left))
    return out


def _pending_problems(pending: dict[str, Any], limits: Limits) -> list[dict[str, Any]]:
    age = pending["oldest_age"]
    if not pending["count"] or (age is not None and age <= limits.max_unsynced):
        return []
    since = "" if age is None else f", the oldest for {duration(age)}"
    message = f"{pending['count']} operation(s) committed locally but not pushed{since} (run michi sync)"
    return [_problem("offline_unpushed", message, count=pending["count"], age=age)]


def dropped_text(dropped: list[dict[str, Any]], sync: dict[str, Any]) -> str:
    """What `pending.dropped` means and what to do, for the check and for the status view."""
    where = f"{sync['remote']}/{sync['branch']}"
    named = ", ".join(f"`{d['command']}` ({str(d['commit'])[:10]})" for d in dropped)
    return (
        f"local branch {sync['branch']} still holds {len(dropped)} michi change(s) a force-push dropped from "
        f"{where}, which michi could not leave out: {named} (run `git rebase -i {where}`, delete their lines)"
    )


def _dropped_problems(dropped: list[dict[str, Any]], sync: dict[str, Any]) -> list[dict[str, Any]]:
    """Local work the remote lacks too, but not for `sync` to push: michi changes a force-push dropped,
    which michi's update could not leave out of the branch (ADR 0004)."""
    if not dropped:
        return []
    message = dropped_text(dropped, sync)
    return [
        _problem(
            "offline_unpushed", message, count=len(dropped), age=None, dropped=[d["commit"] for d in dropped]
        )
    ]


def _corrupt(index: Index, count: int) -> list[dict[str, Any]]:
    if not count:
        return []
    return [
        _problem(
            "corrupt_task_file", f"{_named(path, problem)} (michi doctor lists every problem)", path=path
        )
        for path, problem in sorted(index.problems.items())
    ] or [_problem("corrupt_task_file", f"{count} task file(s) could not be read (see michi doctor)")]


def _stuck(index: Index, now: float) -> list[dict[str, Any]]:
    """One line per kind of open task only a person can mend, counted as `next` counts them."""
    from michi.tasks import backlog

    counts = backlog.counts(index, None, None, now)
    return [
        _problem(
            "stuck_task",
            f"{n} open task(s) {text}: no agent can ever take them until a person mends that (michi doctor)",
            kind=kind,
            count=n,
        )
        for kind, text in STUCK.items()
        if (n := counts[kind])
    ]


def _named(path: str, problem: str) -> str:
    """The problem with its file's path in front, once (most problems name it already)."""
    return problem if problem.startswith(f"{path}:") else f"{path}: {problem}"


def check(session: Session, limits: Limits, *, fetch: bool = False, reap: bool = False) -> CheckReport:
    reaped = None
    failed: list[dict[str, Any]] = []
    if reap:
        from michi.commands import task_change

        try:
            reaped = task_change.reap(session, domain=None, wait=None, offline=False).tasks
        except MichiError as exc:  # the check still reports what it sees; the failure is one more line
            failed.append(
                _problem("reap_failed", f"reaping expired claims failed: {exc.one_line()}", error=exc.code)
            )
    report = status_cmd.collect(session, fetch=fetch)
    data = report.data
    index = task_common.read(session).index  # the snapshot status read, from the index cache
    problems = [
        *_lock_problems(data["lock"], limits),
        *_claim_problems(data["claims"], limits),
        *failed,
        *_pending_problems(data["pending"], limits),
        *_dropped_problems(data["pending"]["dropped"], data["sync"]),
        *_corrupt(index, data["tasks"]["unreadable"]),
        *_stuck(index, time.time()),
    ]
    return CheckReport(problems, reaped, report.notes)
