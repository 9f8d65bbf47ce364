"""The apply function of `michi migrate`: every flat task file to the fan-out layout, and the marker that
makes new tasks fan-out too, in one change (ADR 0006). Files move byte for byte: ids, contents and corrupt
files stay as they are; only their paths change.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from michi.tasks.domains import (
    FANOUT,
    LAYOUT_BYTES,
    LAYOUT_PATH,
    domain_of,
    layout_of,
    task_path,
    uuid_named,
)
from michi.tasks.errors import MigrateClash
from michi.workflow.mutation import ApplyContext, Change, TaskTree


def _fanned(path: str) -> str:
    uuid = path.rsplit("/", 1)[-1].removesuffix(".json")
    return task_path(domain_of(path), uuid, FANOUT)


def _movable(path: str, oid: str) -> bool:
    """A flat plain file named `<uuid>.json`. Any other name (another tool's `cafe-config.json` in its
    own `.tasks/`) is no task of michi's, and a symlink is no task file: they stay where they are, for
    `michi doctor` to report (ADR 0006)."""
    return path.split("/")[-2] == ".tasks" and uuid_named(path) and ":" not in oid  # `git.odd_blob`


def to_fanout(tree: TaskTree, params: Mapping[str, Any], ctx: ApplyContext) -> Change:
    files = tree.task_files()
    moves = {path: _fanned(path) for path, oid in files.items() if _movable(path, oid)}
    marked = layout_of(tree.read(LAYOUT_PATH, limit=LAYOUT_BYTES)) == FANOUT
    clashes = sorted(old for old, new in moves.items() if new in files)
    if clashes:
        raise MigrateClash(
            f"{len(clashes)} task file(s) exist in both layouts, e.g. {clashes[0]} and {moves[clashes[0]]}",
            hint="keep one of each pair (compare them, delete the other with git), then migrate again",
            paths=clashes,
        )
    if not moves and marked:
        return Change("migrate (nothing to do)", result={"moved": 0, "layout": FANOUT})
    writes = {} if marked else {LAYOUT_PATH: f"{FANOUT}\n".encode()}
    return Change(
        f"migrate {len(moves)} task file(s) to the fan-out layout",
        writes=writes,
        links={new: files[old] for old, new in moves.items()},  # the same blobs: nothing is read or written
        deletes=frozenset(moves),
        result={"moved": len(moves), "layout": FANOUT},
    )
