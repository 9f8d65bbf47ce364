"""Taskwarrior 2.6 interop (record 78): what `task import` accepts, and `task export` output read back.

Checked against Taskwarrior 2.6.2: unknown keys survive as orphaned UDAs, but numbers come back as
strings ("42.000000") or floats; exports add `id` and `urgency`; a task completed or deleted in
Taskwarrior keeps the stale `michi_state` it had. `normalize` undoes each of these.
"""

from __future__ import annotations

import json
from pathlib import PurePosixPath
from typing import Any

from michi.errors import UsageError
from michi.tasks import serialization
from michi.tasks.domains import ROOT
from michi.tasks.model import Task, state_for

DOMAIN_KEY = "michi_domain"  # only in exports: where the task lives, so a round trip keeps it there
DROPPED = ("id", "urgency")
WHOLE_NUMBERS = ("michi_id", "michi_version")
# michi states a Taskwarrior status can go with; anything else is re-derived from the status
FITS = {
    "pending": ("todo", "in_progress", "review"),
    "waiting": ("todo",),
    "completed": ("done",),
    "deleted": ("deleted",),
}


def export_record(task: Task, domain: str) -> dict[str, Any]:
    return {**serialization.to_record(task), DOMAIN_KEY: domain}


def parse(text: str) -> list[Any]:
    """A JSON array (json.array=on), or one JSON object per line (Taskwarrior's default)."""
    stripped = text.strip()
    if not stripped:
        return []
    try:
        data = json.loads(stripped)
    except json.JSONDecodeError:
        try:
            data = [
                json.loads(line.rstrip(","))
                for line in stripped.splitlines()
                if line.strip() not in ("", "[", "]")
            ]
        except json.JSONDecodeError as exc:
            raise UsageError(
                f"not Taskwarrior JSON: {exc}", hint="pass the output of 'task export'"
            ) from None
    return data if isinstance(data, list) else [data]


def safe_domain(value: Any) -> str | None:
    """A domain named in an import file, if it is a plain relative path inside the repository."""
    if not isinstance(value, str) or value in ("", ROOT):
        return ROOT if value in ("", ROOT) else None
    path = PurePosixPath(value)
    if path.is_absolute() or any(p in ("..", ".", ".git", ".tasks") for p in path.parts) or "\\" in value:
        return None
    return str(path)


def _whole(value: Any) -> Any:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return value
    return int(number) if number.is_integer() else value


def normalize(item: Any, default_domain: str) -> tuple[dict[str, Any], str]:
    """One `task export` object as a michi file record, and the domain it belongs in."""
    if not isinstance(item, dict) or not isinstance(item.get("uuid"), str):
        raise UsageError(
            "every task to import must be a JSON object with a uuid", hint="pass 'task export' output"
        )
    record = {k: v for k, v in item.items() if k not in DROPPED}
    domain = safe_domain(record.pop(DOMAIN_KEY, None)) or default_domain
    for key in WHOLE_NUMBERS:
        if key in record:
            record[key] = _whole(record[key])
    if isinstance(record.get("depends"), str):  # Taskwarrior before 2.6 wrote a comma-separated string
        record["depends"] = [d for d in record["depends"].split(",") if d]
    status = record.get("status")
    if isinstance(status, str) and record.get("michi_state") not in FITS.get(status, ()):
        record["michi_state"] = state_for(status, record.get("start"))
    record["uuid"] = record["uuid"].lower()
    return record, domain
