"""Numeric ids: unique across the repository and all clones, stable forever, never reused (ADR 0007).

The last id handed out is a committed counter file. `add` reads it inside the transaction, on the fresh
remote state, and writes it back with the new task in the same commit: a push rejected because another
clone added a task first re-runs the allocation on the newer counter, so two clones never take one number.
"""

from __future__ import annotations

import re

from michi.tasks.errors import CorruptTask
from michi.tasks.model import MAX_ID
from michi.workflow.mutation import TaskTree

# Outside `.tasks/`: reading a path costs a parse of every tree on its way, and `.tasks/` may hold 10,000
# entries, while `.michi/` stays small.
COUNTER_PATH = ".michi/last-id"
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
            raise CorruptTask(f"no task ids left: the counter is at {self.last}", hint="see 'michi doctor'")
        self.last += 1
        return self.last

    @property
    def used(self) -> bool:
        return self.last != self.start

    def write(self) -> dict[str, bytes]:
        return {COUNTER_PATH: counter_bytes(self.last)} if self.used else {}
