"""`michi task log ID`: a task's history from git, the audit trail (ADR 0004's commit trailers).

Each commit that changed the task's file is one entry: when, who (the `Michi-Agent` and `Michi-Host`
trailers; the git author for commits michi did not make), which command (the subject after "michi: "),
what changed (field by field, against the version before) and the commit.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from michi.commands import task_common
from michi.commands.freshness import How
from michi.durations import stamp
from michi.results import Result
from michi.session import Session

# Bookkeeping every change touches: shown as the version, not as a change.
_QUIET = {"modified", "michi_version"}


def _trailers(message: str) -> dict[str, str]:
    out = {}
    for line in message.splitlines():
        key, sep, value = line.partition(": ")
        if sep and key.startswith("Michi-") and " " not in key:
            out[key] = value.strip()
    return out


def _name(key: str) -> str:
    """A record key as the task's JSON view names it (`michi_state` -> `state`)."""
    return key.removeprefix("michi_")


def _changes(old: dict[str, Any] | None, new: dict[str, Any] | None) -> dict[str, dict[str, Any]]:
    before, after = old or {}, new or {}
    keys = [k for k in {**before, **after} if k not in _QUIET and before.get(k) != after.get(k)]
    return {_name(k): {"from": before.get(k), "to": after.get(k)} for k in keys}


def _record(data: bytes | None, path: str) -> dict[str, Any] | None:
    """A past version of the file, read as strictly as the current one (ADR 0006): history cannot be
    fixed, so a version once committed nested 100,000 deep, with NaN or a lone surrogate shows as
    unreadable, never stops the log or puts what is not JSON into its output."""
    from michi.tasks.errors import CorruptTask
    from michi.tasks.serialization import decoded

    if data is None:
        return None
    try:
        value = decoded(data, path)
    except CorruptTask as exc:
        return {"unreadable": exc.message[:200]}
    return value if isinstance(value, dict) else {"unreadable": str(value)[:200]}


@dataclass(frozen=True)
class TaskLog(Result):
    id: int
    uuid: str
    path: str
    entries: list[dict[str, Any]]
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> Any:
        return {"id": self.id, "uuid": self.uuid, "path": self.path, "entries": self.entries}

    def summary(self) -> str:
        lines = [f"task {self.id} ({self.path}): {len(self.entries)} change(s)"]
        for e in self.entries:
            who = e["agent"] or e["author"]
            where = f" on {e['host']}" if e["host"] else ""
            lines.append(f"{e['when']}  v{e['version']}  {e['command']}  by {who}{where}  {e['commit'][:10]}")
            for name, change in e["changes"].items():
                lines.append(f"    {name}: {json.dumps(change['from'])} -> {json.dumps(change['to'])}")
        return "\n".join(lines)


def run(session: Session, ref: str, fetch: bool, no_fetch: bool = False) -> TaskLog:
    from michi import git
    from michi.commands.freshness import how
    from michi.commands.task_read import noted
    from michi.tasks.domains import other_layout

    snap = task_common.read(session, how(fetch, no_fetch, How.AUTO))
    with noted(snap.notes):
        path, task = snap.index.get(ref)
    repo = git.open_repo(session.repo.worktree)
    entries: list[dict[str, Any]] = []
    previous: dict[str, Any] | None = None
    for rev in git.path_history(repo, snap.ref, path, *other_layout(path)):
        record = _record(None if rev.blob is None else git.read_blob(repo, rev.blob), path)
        trailers = _trailers(rev.message)
        subject = rev.message.splitlines()[0] if rev.message else ""
        entries.append(
            {
                "when": stamp(rev.time),
                "agent": trailers.get("Michi-Agent"),
                "host": trailers.get("Michi-Host"),
                "author": rev.author,
                "command": subject.removeprefix("michi: "),
                "version": (record or {}).get("michi_version"),
                "changes": _changes(previous, record),
                "commit": rev.commit,
                "txn": trailers.get("Michi-Txn"),
            }
        )
        previous = record
    return TaskLog(task.id, task.uuid, path, entries, snap.notes)
