"""`michi export` (a JSON array Taskwarrior's `task import` accepts) and `michi import FILE` (`task export`
output, matched by uuid: new tasks added with new ids, changed ones modified, the rest skipped; a task
michi changed after the data was exported is a conflict, left alone unless `--force`)."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any

from michi.commands import task_common
from michi.errors import Conflict, UsageError
from michi.results import Result
from michi.session import Session
from michi.tasks import domains, taskwarrior


@dataclass(frozen=True)
class Export(Result):
    records: list[dict[str, Any]]

    def to_json(self) -> Any:
        return self.records


def export(session: Session, *, every_domain: bool, domain: str | None, fetch: bool) -> Export:
    where = None if every_domain else domains.resolve(session.repo.worktree, session.cwd, domain)
    snap = task_common.read(session, fetch)
    found = sorted(
        ((p, t) for p, t in snap.index.tasks.items() if where is None or domains.domain_of(p) == where),
        key=lambda pt: pt[1].id,
    )
    return Export([taskwarrior.export_record(t, domains.domain_of(p)) for p, t in found])


IMPORT_CHUNK = 10_000  # tasks per import commit: 50,000 tasks land as 5 commits (ADR 0015)


class ImportConflict(Conflict):
    code = "import_conflict"


def import_file(
    session: Session,
    source: str,
    *,
    domain: str | None,
    wait: float | None,
    offline: bool,
    force: bool = False,
) -> task_common.Changed:
    from michi.workflow import Mutation

    where = domains.resolve(session.repo.worktree, session.cwd, domain)
    try:
        text = sys.stdin.read() if source == "-" else (session.cwd / source).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(
            f"cannot read {source}: {exc}", hint="pass a file written by 'task export'"
        ) from None
    records = []
    for item in taskwarrior.parse(text):
        record, named = taskwarrior.normalize(item)
        # The same checks as --domain (ADR 0006): a domain naming a file or a symlink is refused.
        top = session.repo.worktree
        home = where if named is None else domains.resolve_imported(top, named, record["uuid"])
        records.append({"record": record, "domain": home})
    # A handful of commits, one transaction each (ADR 0015): each journal entry and commit stays bounded,
    # and a repeated import after a failure skips what already landed (records match by uuid).
    merged: dict[str, list[Any]] = {}
    results: list[Any] = []
    txn: dict[str, Any] = {}
    for start in range(0, max(len(records), 1), IMPORT_CHUNK):
        params = {"records": records[start : start + IMPORT_CHUNK], "force": force}
        outcome = task_common.transact(
            session, Mutation("michi.tasks.create:import_tasks", params), wait, offline
        )
        for key, values in outcome.result["report"].items():
            merged.setdefault(key, []).extend(values)
        results += outcome.result["tasks"]
        info = task_common.txn_info(outcome)
        txn = {
            **info,
            "commit": info["commit"] or txn.get("commit"),
            "notes": txn.get("notes", []) + info["notes"],
        }
        txn["pushed"] = bool(info["pushed"] or txn.get("pushed"))
    snap = task_common.read(session)
    tasks = task_common.views(results, snap.index)
    result = task_common.Changed(tasks, txn, merged)
    conflicts = result.report["conflicts"]
    if conflicts:
        report = result.to_json()
        raise ImportConflict(
            f"{len(conflicts)} task(s) changed in michi after the data was exported, left as they are "
            f"(ids {', '.join(str(c['id']) for c in conflicts)}); "
            f"added {len(report['added'])}, modified {len(report['modified'])}",
            hint="export again (`michi export`, then `task import`), redo those changes in Taskwarrior and "
            "import again; or pass --force to overwrite michi's newer changes",
            **{k: v for k, v in report.items() if k != "tasks"},
        )
    return result
