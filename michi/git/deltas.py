"""What differs between two trees, as michi knew it when it built the second from the first.

A transaction builds its commit's tree from the remote tip's by editing a few paths (`edit_tree`), so it
knows the difference exactly. The next command (often the same agent's next call) brings its task index
from that tip's tree to this one and would ask `git diff-tree` for it: a process on the path of every
command. The difference is a fact about two content-addressed trees, true forever, so it is kept in the
state dir for the last few trees built here and read instead of running git.
"""

from __future__ import annotations

import contextlib
import json
from typing import TYPE_CHECKING, Any

from michi.atomic import write_atomic

if TYPE_CHECKING:
    from michi.git.repo import Repo

NAME = "tree-deltas.json"
KEEP = 8  # the last few: one per transaction, and a command is rarely more than a few behind
MAX_PATHS = 200  # an import's thousands of paths are cheaper to diff than to store and parse

Delta = dict[str, tuple[int, str] | None]  # path -> (mode, blob oid) in the new tree, None: not there


def remember_delta(repo: Repo, old_tree: str, new_tree: str, delta: Delta) -> None:
    """Best effort: without it, git is asked."""
    if old_tree == new_tree or len(delta) > MAX_PATHS:
        return
    path = repo.paths.state_dir / NAME
    kept: list[list[object]] = [list(k) for k in _load(repo) if (k[0], k[1]) != (old_tree, new_tree)]
    kept = kept[-(KEEP - 1) :]
    kept.append([old_tree, new_tree, {p: list(e) if e else None for p, e in delta.items()}])
    with contextlib.suppress(OSError):
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, json.dumps(kept).encode())


def recall_delta(repo: Repo, old_tree: str, new_tree: str) -> Delta | None:
    """The paths that differ from `old_tree` to `new_tree`, if this repository built the one from the
    other lately; else None."""
    for old, new, delta in _load(repo):
        if old == old_tree and new == new_tree:
            try:
                return {str(p): (int(e[0]), str(e[1])) if e else None for p, e in delta.items()}
            except (TypeError, ValueError, IndexError, KeyError):
                return None
    return None


def _load(repo: Repo) -> list[tuple[object, object, dict[str, Any]]]:
    try:
        kept = json.loads((repo.paths.state_dir / NAME).read_bytes())
    except (OSError, ValueError):
        return []
    if not isinstance(kept, list):
        return []
    return [
        (k[0], k[1], k[2]) for k in kept if isinstance(k, list) and len(k) == 3 and isinstance(k[2], dict)
    ]


def _well_formed(kept: object) -> bool:
    return isinstance(kept, list) and len(kept) == 3 and isinstance(kept[2], dict)
