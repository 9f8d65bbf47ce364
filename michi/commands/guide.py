"""`michi guide`: the agent's manual (text) and `michi --json guide`: the machine-readable contract.

The contract's commands come from the CLI's own definition (the CLI passes them in), its error codes and
exit codes from the code (`catalogue`), the task's fields from the view (`VIEW_KEYS`): it cannot drift.
The manual's exit and error code lines are generated from the same data (ADR 0012).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from michi import __version__
from michi.commands import catalogue
from michi.results import Result
from michi.tasks.query import VIEW_KEYS

TASK_FIELDS = {
    "id": "number, unique across clones, never reused; next --claim gives the uuid instead when another "
    "file has the same number (michi doctor names them): pass it as given",
    "uuid": "the task's uuid (works wherever an id does, as does a unique prefix)",
    "description": "what needs doing",
    "status": "Taskwarrior's: pending, completed, deleted, waiting",
    "state": "michi's: todo, in_progress, review, done, deleted",
    "priority": "H, M, L or null",
    "project": "Taskwarrior project or null",
    "tags": "list of tags",
    "depends": "ids this task waits for (it is ready once they are done or deleted)",
    "assignee": "the agent holding (or last holding) the claim, or null",
    "claim_expires": "when the claim runs out (null with an assignee: never)",
    "version": "bumped by every change; pass it as --if-version N to refuse stale changes",
    "domain": "the folder whose .tasks/ holds it ('.' = repository root)",
    "entry": "created",
    "modified": "last changed",
    "start": "started (claimed) or null",
    "end": "done or deleted, or null",
    "annotations": "list of {entry, description}",
}
assert tuple(TASK_FIELDS) == VIEW_KEYS
EXTRA_FIELDS = {
    "urgency": "Taskwarrior's urgency (next and next --claim): why this task was chosen",
    "transaction": "changing commands: {commit, pushed, branch, notes}",
}
NO_READY_COUNTS = {
    "open": "tasks neither done nor deleted, and task files that cannot be read; 0 = all work is finished",
    "blocked": "open tasks waiting for an open dependency",
    "claimed": "in progress for other agents (their claims expire after claim_ttl)",
    "mine": "in progress under your own claim: finish those",
    "review": "waiting for review",
    "waiting": "held back by a wait or scheduled date still to come (whatever the status says)",
    "unnamed": "another file has both its id and uuid (michi doctor), or waiting on such a task: never "
    "handed out, a person must fix it",
    "missing": "waiting (maybe through other tasks) on a task that does not exist or cannot be read: never "
    "ready until a person drops the dependency (michi doctor)",
    "cycle": "in a dependency cycle, or waiting on one: none can ever start until a person mends the "
    "dependencies (michi doctor)",
    "bad_date": "a wait or scheduled that is no date holds it (or a task it waits on) back for good: a "
    "person mends it (michi doctor)",
    "mismatch": "a status of completed or deleted while michi_state says open, or waiting on such a task: "
    "never handed out until a person mends it (michi doctor)",
    "unreadable": "task files that cannot be read (michi doctor): counted in open, never as finished",
    "stuck": "open tasks only a person can free: unnamed, missing, cycle, bad_date, mismatch, unreadable; "
    "open == stuck: stop",
}

MANUAL = """\
michi guide: how an agent works with michi {version} (the whole contract: michi --json guide)

Tasks live in git; every change is one commit pushed to the remote under a lock, so agents on
different clones never get the same task. Pass --json: stdout is then exactly one JSON document,
and notes (how fresh the answer is) go to stderr. Name yourself: MICHI_AGENT=NAME or --agent NAME.

THE WORK LOOP
  michi --json task next --claim      claim the most urgent ready task (fetches first)
    exit 0  the task object: it is now in_progress and assigned to you (no 'start' needed);
            use its "id" as given (the uuid when another file has the same number)
    exit 3  no_ready_task: read error.open and error.stuck
              open == 0      all work is finished: stop
              open == stuck  only what a person must mend is left (unreadable files, tasks
                             waiting on a missing task, names shared; michi doctor): stop, tell one
              otherwise      others hold or block the rest: wait a minute, ask again
  do the work, then one of:
  michi --json task done ID           finished (or: task review ID, to hand it over)
  michi --json task release ID        give it back unfinished
  ...and claim the next one.
  Calling michi in a loop: run 'michi server start' once (or set MICHI_SERVER=auto); every
  michi command then starts in a few ms instead of importing michi anew. Output is the same.

CLAIMS AND LEASES
  A claim lasts claim_ttl (1 h; --ttl SECONDS). Renew long work: michi task renew ID.
  An expired claim may be taken over by another agent ('michi task reap' releases them all).
  Only the holder may renew, release or change a claimed task: others get exit 4
  (claimed, not_claim_owner). --if-version N refuses (version_mismatch) if the task changed.
  'task start ID' on your own claim succeeds and changes nothing.
  Exit 4 is final for that task: do not retry it; ask next --claim for another.

READING
  michi --json task list [--state S] [-t TAG] [--ready] [--all]   open tasks (array)
  michi --json task show ID  ·  michi --json task log ID (its history from git)
  'next' always fetches; list/show/log fetch when the last sync is older than read_max_age (60 s).

JSON SHAPES
  task:  {{{fields}}}
         next adds "urgency"; changing commands add "transaction": {{commit, pushed, branch, notes}}
  list:  [task, ...]       error: {{"error": {{"code", "message", "hint", ...details}}}}
  no_ready_task details: {counts}
  times: YYYYMMDDTHHMMSSZ (UTC), as Taskwarrior writes them

EXIT CODES AND ERROR CODES (error.code)
{codes}
  Retry after a pause: 75 and remote_unreachable. push_unknown: do not repeat, run 'michi sync'.

SCRIPTS AND THE LOCK
  michi lock run -- CMD     run CMD under the repo lock (its commits pass michi's hook).
                            It exits with CMD's status; 75 = busy, CMD never ran (a CMD that may
                            exit 75 itself: 'lock run -E N' makes busy exit N instead).
  The lock serializes one clone only. To push your own commits safely across clones, retry:
    until git pull --rebase && git push; do sleep 1; done
"""


def manual() -> str:
    import textwrap

    codes = catalogue.all_error_codes()
    lines = []
    for exit_code, meaning in catalogue.EXIT_MEANINGS.items():
        names = sorted(c for c, exits in codes.items() if exit_code in exits)
        line = f"  {int(exit_code):>3}  {meaning}" + (f"; codes: {', '.join(names)}" if names else "")
        lines.append(textwrap.fill(line, 100, subsequent_indent=" " * 7))
    fields = textwrap.fill(", ".join(VIEW_KEYS), 90, subsequent_indent=" " * 10)
    return MANUAL.format(
        version=__version__,
        fields=fields,
        counts=textwrap.fill(", ".join(NO_READY_COUNTS), 80, subsequent_indent=" " * 25),
        codes="\n".join(lines),
    )


def _exits(exits: list[int]) -> dict[str, Any]:
    """A code's exit code, and those it also comes with from some commands (`lock_lost`: 75, also 4)."""
    return {"exit_code": exits[0], **({"also": exits[1:]} if len(exits) > 1 else {})}


def contract(commands: list[dict[str, Any]]) -> dict[str, Any]:
    codes = catalogue.all_error_codes()
    return {
        "michi": __version__,
        "json": "with --json, stdout is exactly one JSON document: the result, or {error: {...}}",
        "exit_codes": {str(int(k)): v for k, v in catalogue.EXIT_MEANINGS.items()},
        "error_codes": {code: _exits(exits) for code, exits in codes.items()},
        "task": {"fields": TASK_FIELDS, "extra_fields": EXTRA_FIELDS, "time_format": "YYYYMMDDTHHMMSSZ"},
        "no_ready_task": NO_READY_COUNTS,
        "commands": commands,
    }


@dataclass(frozen=True)
class Guide(Result):
    text: str
    data: dict[str, Any]

    def to_json(self) -> Any:
        return self.data

    def summary(self) -> str:
        return self.text
