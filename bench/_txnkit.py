"""The benchmark's mutation: write one new task-sized file, as the raw shell sequence does."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from michi.workflow import ApplyContext, Change, TaskTree


def write_one(tree: TaskTree, params: Mapping[str, Any], ctx: ApplyContext) -> Change:
    name = str(params["name"])
    body = json.dumps({"description": name, "status": "pending"}, indent=2) + "\n"
    return Change(subject=f"bench {name}", writes={f".tasks/{name}.json": body.encode()}, result=name)
