"""Test mutations for the transaction engine: importable by every process a test starts (crash recovery
re-applies a journaled mutation in another process, so these cannot be closures)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from michi.errors import Conflict
from michi.workflow import ApplyContext, Change, TaskTree

LOG = ".tasks/log.json"


def append(tree: TaskTree, params: Mapping[str, Any], ctx: ApplyContext) -> Change:
    """Append a name to one shared file: every clone's op conflicts with every other's, and a doubled
    application would show as the name twice."""
    raw = tree.read(LOG)
    names: list[str] = json.loads(raw) if raw else []
    name = str(params["name"])
    if params.get("refuse_if_present") and name in names:
        raise Conflict(f"{name} is already there")
    names.append(name)
    return Change(
        subject=f"append {name}",
        writes={LOG: (json.dumps(names, indent=0) + "\n").encode()},
        trailers={"Michi-Item": name},
        result={"name": name, "count": len(names)},
    )


def noop(tree: TaskTree, params: Mapping[str, Any], ctx: ApplyContext) -> Change:
    return Change(subject="nothing", result={"seen": tree.commit})
