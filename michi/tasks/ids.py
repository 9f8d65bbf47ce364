"""Numeric ids: unique across the repository and all clones, stable forever, never reused (ADR 0007).

The last id handed out is a committed counter file. `add` reads it inside the transaction, on the fresh
remote state, and writes it back with the new task in the same commit: a push rejected because another
clone added a task first re-runs the allocation on the newer counter, so two clones never take one number.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from michi.tasks.errors import CorruptTask, IdsExhausted
from michi.tasks.model import MAX_ID, Task
from michi.workflow.mutation import ApplyContext, Change, TaskTree

# Outside `.tasks/`: reading a path costs a parse of every tree on its way, and `.tasks/` may hold 10,000
# entries, while `.michi/` stays small.
COUNTER_PATH = ".michi/last-id"
RENUMBER = "michi.tasks.ids:renumber"  # the apply function below, as a journal entry names it
UUID_RE = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


def last_id(tree: TaskTree) -> int:
    raw = tree.read(COUNTER_PATH, limit=64)  # a number of at most 19 digits: more is corrupt, never read
    if raw is None:
        return 0
    text = raw.decode("utf-8", "replace").strip()
    if not (text.isascii() and text.isdigit()) or len(text) > len(str(MAX_ID)) or int(text) > MAX_ID:
        raise CorruptTask(
            f"{COUNTER_PATH}: {text[:40]!r} is not a whole number from 0 to {MAX_ID}",
            hint="write the highest id in use ('michi doctor' names it) into it, then commit and push it",
        )
    return int(text)


def counter_bytes(value: int) -> bytes:
    return f"{value}\n".encode()


class Allocator:
    """Hands out ids above both the counter and every id already seen (hand-added or imported files)."""

    def __init__(self, tree: TaskTree, floor: int = 0) -> None:
        self.last = max(last_id(tree), floor)
        self.start = self.last

    def take(self) -> int:
        if self.last >= MAX_ID:
            raise IdsExhausted(
                f"no task ids left: the highest id in use or the counter ({COUNTER_PATH}) is at {MAX_ID:,}, "
                "the last id there is, and ids are never reused",
                hint="only a hand edit or an import sets an id so high, and `michi doctor` names where: set "
                "that task file's id and the counter lower by hand (allow_hand_edits), then add again",
                limit=MAX_ID,
            )
        self.last += 1
        return self.last

    @property
    def used(self) -> bool:
        return self.last != self.start

    def write(self) -> dict[str, bytes]:
        return {COUNTER_PATH: counter_bytes(self.last)} if self.used else {}


def renumber(tree: TaskTree, params: Mapping[str, Any], ctx: ApplyContext) -> Change:
    """Give each of `tasks` (`[{uuid, old}]`) the next free id, when its file still has id `old` and another
    task file has it too: an offline add that someone's own `git push` landed with its provisional id,
    after another clone's task had taken that id (ADR 0007). On a tree where that is no longer so (applied
    again, or the other task was renumbered first) it changes nothing."""
    from pathlib import Path

    from michi.tasks import idmap, serialization
    from michi.tasks.index import light
    from michi.tasks.model import MAX_TASK_BYTES
    from michi.tasks.mutations import written

    index = light(tree, Path(ctx.state_dir))  # the highest id and the id lookups: no full index (ADR 0015)
    allocator = Allocator(tree, floor=index.max_id)
    moved: list[tuple[str, Task]] = []
    olds: list[int] = []
    for item in params["tasks"]:
        uuid, old = str(item["uuid"]), int(item["old"])
        held = index.paths_with_id(old)
        mine = [p for p in held if idmap.stem(p) == uuid]
        data = tree.read(mine[0], limit=MAX_TASK_BYTES) if len(mine) == 1 and len(held) > 1 else None
        if data is None:
            continue
        try:
            task = serialization.loads(data, mine[0])
        except CorruptTask:  # a hand edit since: `michi doctor` names it, nothing here can mend it
            continue
        moved.append((mine[0], task.evolve(ctx.now, id=allocator.take())))
        olds.append(old)
    if not moved:
        return Change("task renumber (nothing to do)")
    one = f"task renumber {olds[0]} to {moved[0][1].id}"
    return written(one if len(moved) == 1 else f"task renumber {len(moved)} tasks", moved, allocator.write())
