"""What differs between two trees, as michi knew it when it built the second from the first.

A transaction builds its commit's tree from the remote tip's by editing a few paths (`edit_tree`), so it
knows the difference exactly. The next commands (often the same agent's next calls) bring their task
index or ranking from an earlier tree to the current one and would ask `git diff-tree` for it: a process
on the path of every command. A difference is a fact about two content-addressed trees, true forever, so
the last few are kept in the state dir, each path with its entry before and after; a chain of them
(A to B, B to C) answers for A to C, a path counting only if its entry at the end is not the one at the
start. Anything else (another clone's commits in between) is asked of git.
"""

from __future__ import annotations

import contextlib
import json
from typing import TYPE_CHECKING, Any

from michi.atomic import read_regular, write_cache

if TYPE_CHECKING:
    from michi.git.repo import Repo

NAME = "tree-deltas.json"
KEEP = 16  # one per transaction here; a ranking is rarely more than a few transactions behind
MAX_PATHS = 200  # an import's thousands of paths are cheaper to diff than to store and parse

Entry = tuple[int, str] | None  # (mode, blob oid), None: no file there
Delta = dict[str, Entry]  # path -> its entry in the new tree, for the paths that differ
Changes = dict[str, tuple[Entry, Entry]]  # path -> (entry in the old tree, entry in the new)


def remember_delta(repo: Repo, old_tree: str, new_tree: str, changes: Changes) -> None:
    """Best effort: without it, git is asked."""
    changes = {p: (b, a) for p, (b, a) in changes.items() if b != a}
    if old_tree == new_tree or len(changes) > MAX_PATHS:
        return
    kept = [k for k in _load(repo) if (k[0], k[1]) != (old_tree, new_tree)][-(KEEP - 1) :]
    kept.append((old_tree, new_tree, {p: [_out(b), _out(a)] for p, (b, a) in changes.items()}))
    path = repo.paths.state_dir / NAME
    with contextlib.suppress(OSError):
        path.parent.mkdir(parents=True, exist_ok=True)
        write_cache(path, json.dumps([list(k) for k in kept]).encode())


def recall_delta(repo: Repo, old_tree: str, new_tree: str) -> Delta | None:
    """The paths that differ from `old_tree` to `new_tree` with their entries in `new_tree`, if this
    repository built the one from the other (through its last few trees); else None."""
    hops = _load(repo)
    composed: Changes = {}
    here, steps = old_tree, 0
    while here != new_tree:
        step = next((k for k in reversed(hops) if k[0] == here), None)
        if step is None or steps == len(hops):
            return None
        try:
            for path, (before, after) in step[2].items():
                first = composed[path][0] if path in composed else _in(before)
                composed[str(path)] = (first, _in(after))
        except (TypeError, ValueError, IndexError):
            return None
        here, steps = str(step[1]), steps + 1
    return {p: a for p, (b, a) in composed.items() if b != a}


def _out(entry: Entry) -> list[object] | None:
    return list(entry) if entry is not None else None


def _in(entry: Any) -> Entry:
    return (int(entry[0]), str(entry[1])) if entry is not None else None


def _load(repo: Repo) -> list[tuple[object, object, dict[str, Any]]]:
    try:
        kept = json.loads(read_regular(repo.paths.state_dir / NAME))
    except (OSError, ValueError):
        return []
    if not isinstance(kept, list):
        return []
    return [(k[0], k[1], k[2]) for k in kept if _well_formed(k)]


def _well_formed(kept: object) -> bool:
    return isinstance(kept, list) and len(kept) == 3 and isinstance(kept[2], dict)
