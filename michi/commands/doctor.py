"""`michi doctor`: every task file that cannot be read, duplicate ids and uuids, a counter behind the ids in
use, open tasks that depend on each other, open tasks that depend on a task no file holds, open tasks
whose `wait` or `scheduled` is no date (none of them can ever start), and tasks whose status and
michi_state disagree on whether they are finished."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from michi.commands import task_common
from michi.results import Result
from michi.session import Session


@dataclass(frozen=True)
class Report(Result):
    problems: list[dict[str, Any]]
    tasks: int = 0
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> Any:
        return {"ok": not self.problems, "tasks": self.tasks, "problems": self.problems}

    def summary(self) -> str:
        if not self.problems:
            return f"no problems in {self.tasks} task file(s)"
        lines = [f"{len(self.problems)} problem(s):"]
        for p in self.problems:
            where = str(p.get("path") or p.get("id") or p.get("uuid") or "dependencies")
            problem = str(p["problem"])  # a file's problem may name its path first: said once
            lines.append(f"  {where}: {problem.removeprefix(where + ': ')}")
        return "\n".join(lines)


def run(session: Session, *, fetch: bool) -> Report:
    from michi.tasks import ids
    from michi.tasks.model import MAX_ID
    from michi.workflow import read_snapshot

    snap = task_common.read(session, fetch)
    index = snap.index
    tree = read_snapshot(session.repo, session.config)
    # A symlink at a task file's path is one of them, said to be one (`index.not_a_file`).
    problems: list[dict[str, Any]] = [
        {"path": p, "problem": msg} for p, msg in sorted(index.problems.items())
    ]
    for ident, paths in sorted(index.by_id.items()):
        if len(paths) > 1:
            problems.append(
                {"id": ident, "paths": paths, "problem": f"id {ident} is used by {len(paths)} files"}
            )
    if index.uuid_twice:
        for uuid, paths in sorted(index.uuid_paths.items()):
            if len(paths) > 1:
                problems.append(
                    {"uuid": uuid, "paths": paths, "problem": f"uuid {uuid} is used by {len(paths)} files"}
                )
    problems += _cycles(index)
    problems += _missing(index)
    problems += _bad_holds(index)
    problems += _split(index)
    try:
        counter = ids.last_id(tree)
    except Exception as exc:  # CorruptTask: reported like any other problem, with the number it needs
        problems.append(
            {
                "path": ids.COUNTER_PATH,
                "problem": f"{exc}; the highest id in use is {index.max_id}: write {index.max_id} into it, "
                "then commit and push it",
                "highest_id": index.max_id,
            }
        )
    else:
        if max(counter, index.max_id) >= MAX_ID:  # `task add` refuses ("no task ids left"): say why here
            holders = index.by_id.get(MAX_ID, [])
            problems.append(
                {
                    "path": holders[0] if holders else ids.COUNTER_PATH,
                    "problem": f"no task ids are left: {' and '.join(holders) or 'the counter'} reached "
                    f"{MAX_ID}, the highest id; `task add` refuses until that is set lower by hand",
                }
            )
        if counter < index.max_id:
            problems.append(
                {
                    "path": ids.COUNTER_PATH,
                    "problem": f"counter {counter} is below the highest id {index.max_id}",
                }
            )
    return Report(problems, len(index.entries), snap.notes)


def _cycles(index: Any) -> list[dict[str, Any]]:
    """Open tasks that depend on each other: `next` would call them blocked for ever. `task modify`
    refuses to make one; a hand edit or an import can."""
    from michi.tasks.cycles import cycles
    from michi.tasks.model import OPEN_STATES

    depends: dict[str, list[str]] = {}
    ids: dict[str, Any] = {}
    for record in (entry[1] for entry in index.entries.values()):
        if record is not None and record["michi_state"] in OPEN_STATES:
            depends[record["uuid"]] = list(record.get("depends") or ())
            ids[record["uuid"]] = record.get("michi_id")
    found = []
    for group in cycles(depends):
        numbers = sorted(ids[u] for u in group if ids[u] is not None)
        shown = ", ".join(str(n) for n in numbers) or ", ".join(group)
        first = numbers[0] if numbers else group[0]
        found.append(
            {
                "ids": numbers,
                "uuids": group,
                "problem": f"tasks {shown} depend on each other: none of them can ever start "
                f"(`michi task modify {first} --remove-depends ...` breaks the cycle)",
            }
        )
    return found


def _missing(index: Any) -> list[dict[str, Any]]:
    """Open tasks that depend on a uuid no task file is named by (its file removed by hand, or purged in
    Taskwarrior before the import): such a dependency blocks for ever (ADR 0007), so `next` never hands
    the task out. A dependency whose file exists but cannot be read is that file's problem, listed above."""
    from michi.tasks.model import OPEN_STATES

    found = []
    for record in sorted((e[1] for e in index.entries.values() if e[1] is not None), key=_by_id):
        if record["michi_state"] not in OPEN_STATES:
            continue
        for dep in record.get("depends") or ():
            if dep not in index.by_uuid:
                ident = record.get("michi_id")
                found.append(
                    {
                        "id": ident,
                        "uuid": record["uuid"],
                        "depends": dep,
                        "problem": f"task {ident} depends on {dep}, which no task file holds: it can never "
                        f"start (`michi task modify {ident} --remove-depends {dep}` drops the dependency)",
                    }
                )
    return found


def _bad_holds(index: Any) -> list[dict[str, Any]]:
    """Open tasks whose `wait` or `scheduled` is no date (a hand edit, another tool's file): it holds the
    task back for good (`model.HOLDS`), so `next` never hands it out. No michi command sets either date:
    the mend goes through an export and an import, whose records must hold real dates."""
    from michi.tasks.model import OPEN_STATES, bad_holds

    found = []
    for record in sorted((e[1] for e in index.entries.values() if e[1] is not None), key=_by_id):
        if record["michi_state"] not in OPEN_STATES:
            continue
        for key in bad_holds(record):
            ident, shown = record.get("michi_id"), str(record[key])[:40]
            found.append(
                {
                    "id": ident,
                    "uuid": record["uuid"],
                    "field": key,
                    "problem": f"task {ident}: {key} {shown!r} is no date, so it is never handed out "
                    f"(`michi export`, write its {key} as YYYYMMDDTHHMMSSZ in UTC or remove it, then "
                    "`michi import` that file)",
                }
            )
    return found


def _split(index: Any) -> list[dict[str, Any]]:
    """Tasks whose status and michi_state disagree on whether they are finished (`model.split`: a hand
    edit, another tool's file). michi_state decides (ADR 0007): an open one is never handed out (its
    status says someone finished it), a finished one is finished here but open to Taskwarrior, and an
    export to it would reopen it. Any michi change writes the status that goes with the state
    (`Task.evolve`), so a michi command mends either."""
    from michi.tasks.model import OPEN_STATES, split

    found = []
    for record in sorted((e[1] for e in index.entries.values() if e[1] is not None), key=_by_id):
        status, state = record["status"], record["michi_state"]
        if not split(status, state):
            continue
        ident = record.get("michi_id")
        said = f"task {ident}: status {status!r} but michi_state {state!r}: "
        if state in OPEN_STATES:
            verb = "done" if status == "completed" else "delete"
            said += (
                f"michi counts it open and never hands it out (`michi task {verb} {ident}` if it is "
                f"finished; if not, `michi task annotate {ident} TEXT` writes status pending)"
            )
        else:
            said += (
                f"michi counts it finished, Taskwarrior open (`michi task annotate {ident} TEXT` writes "
                f"status {'completed' if state == 'done' else 'deleted'}; if it is not finished, `michi "
                "export`, set its michi_state to todo, `michi import` that file)"
            )
        found.append({"id": ident, "uuid": record["uuid"], "status": status, "state": state, "problem": said})
    return found


def _by_id(record: dict[str, Any]) -> tuple[int, str]:
    return (record.get("michi_id") or 0, record["uuid"])
