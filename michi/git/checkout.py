"""Moving the user's index and work tree between two commits that differ in a few paths (ADR 0015).

`git read-tree -m -u old new` reads both trees and the whole index: at 50,000 task files that is a
quarter of a second inside the lock for every transaction, though a commit of michi's changes one or two
files. Here only the paths that differ are checked and moved, with the same promise as read-tree: a path
that differs may be moved only when the index holds `old`'s version and the work tree file matches the
index (or, for a path `old` lacks, nothing is there); otherwise nothing at all changes and the refusal is
returned. The user's staged and unstaged work in every other path is not even looked at.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from michi.git.core import NO_PROMPT, _exec, _must, lock_held

if TYPE_CHECKING:
    from michi.git.repo import Repo

# Above this many changed paths one read-tree is cheaper than the per-path work (and a first checkout of a
# whole task branch is such a case).
MAX_PATHS = 200
Entry = tuple[int, str] | None  # (mode, blob oid), None when the path is absent
LITERAL = {"GIT_LITERAL_PATHSPECS": "1"}  # a path is a name, never a pattern


def _names(out: str) -> list[str]:
    return [p for p in out.split("\0") if p]


def _git_stdin(repo: Repo, args: list[str], data: bytes) -> tuple[int, str]:
    assert repo.working_dir is not None
    proc = subprocess.run(
        ["git", *args],
        cwd=repo.working_dir,
        input=data,
        capture_output=True,
        env={**os.environ, **NO_PROMPT},
        check=False,
    )
    return proc.returncode, proc.stderr.decode("utf-8", "replace")


def _refusal(repo: Repo, old: str, paths: list[str], added: list[str], deleted: set[str]) -> str | None:
    """Why moving `paths` away from `old` would lose something of the user's, or None when it would not."""
    # One process for the common case: empty means the index holds old's version of every path and no
    # work tree file is even stat-dirty. Otherwise the exact checks decide (a touched but unchanged file
    # must not block michi, as it does not block read-tree).
    status, out, err = _exec(
        repo, "diff-index", "-z", "--name-only", "--no-renames", old, "--", *paths, env=LITERAL
    )
    if status == 0 and not out:
        return _untracked(repo, added, deleted)
    status, staged, err = _exec(
        repo, "diff-index", "--cached", "-z", "--name-only", "--no-renames", old, "--", *paths, env=LITERAL
    )
    if status != 0:
        return err.strip() or f"diff-index exited {status}"
    if _names(staged):
        return f"error: your staged changes to {_names(staged)[0]} would be overwritten"
    status, unstaged, err = _exec(
        repo, "diff", "-z", "--name-only", "--no-renames", "--no-ext-diff", "--", *paths, env=LITERAL
    )
    if status != 0:
        return err.strip() or f"diff exited {status}"
    if _names(unstaged):
        return f"error: your local changes to {_names(unstaged)[0]} would be overwritten"
    return _untracked(repo, added, deleted)


def _untracked(repo: Repo, added: list[str], deleted: set[str]) -> str | None:
    """Something of the user's where a file is to be added. A folder is fine when all it holds are files
    this move deletes (a folder that becomes a file, as read-tree allows)."""
    assert repo.working_dir is not None
    top = Path(repo.working_dir)
    for path in added:
        where = top / path
        if not os.path.lexists(where):
            continue
        if where.is_dir() and not where.is_symlink():
            inside = [
                Path(folder, name).relative_to(top).as_posix()
                for folder, _dirs, names in os.walk(where)
                for name in names
            ]
            if all(p in deleted for p in inside):
                continue
        return f"error: the untracked file {path} would be overwritten"
    return None


def _diff(repo: Repo, old: str, new: str) -> dict[str, tuple[Entry, Entry]]:
    """path -> (its entry in old, its entry in new), for the paths that differ (one git process)."""
    out = _must(repo, "diff-tree", "-r", "-z", "--no-renames", old, new)
    fields = out.split("\0")
    diff: dict[str, tuple[Entry, Entry]] = {}
    for meta, path in zip(fields[0::2], fields[1::2], strict=False):
        if meta.startswith(":"):
            old_mode, new_mode, old_oid, new_oid, status = meta[1:].split(" ")
            diff[path] = (
                None if status == "A" else (int(old_mode, 8), old_oid),
                None if status == "D" else (int(new_mode, 8), new_oid),
            )
    return diff


def _known(repo: Repo, old: str, known: Mapping[str, Entry]) -> dict[str, tuple[Entry, Entry]]:
    """The diff from `old`, given the new entry of every path that differs: the old entries come from one
    `ls-tree` of those paths, far cheaper than a diff of two 50,000-entry trees."""
    out = _must(repo, "ls-tree", "-z", "--full-tree", old, "--", *known, env=LITERAL)
    before: dict[str, Entry] = {}
    for record in out.split("\0"):
        meta, _, path = record.partition("\t")
        if meta:
            mode, kind, oid = meta.split(" ")
            before[path] = (int(mode, 8), oid) if kind == "blob" else None
    return {p: (before.get(p), n) for p, n in known.items() if before.get(p) != n}


def move_paths(
    repo: Repo, old: str, new: str, known: Mapping[str, Entry] | None = None
) -> tuple[bool, str | None]:
    """(done, refusal): done is False when the change is too large for this path (use read-tree).
    `known`, when given, is every path that differs from `old` to `new` with its entry in `new`."""
    diff = (
        _known(repo, old, known) if known is not None and len(known) <= MAX_PATHS else _diff(repo, old, new)
    )
    if not diff:
        return True, None
    if len(diff) > MAX_PATHS:
        return False, None
    changes = {p: n for p, (_o, n) in diff.items()}
    before = {p: o for p, (o, _n) in diff.items()}  # what to put back if writing the files fails
    paths = sorted(changes)
    added = [p for p in paths if before.get(p) is None]
    deleted = {p for p in paths if changes[p] is None}
    refused = _refusal(repo, old, paths, added, deleted)
    if refused is not None:
        return True, refused
    info = b"".join(_index_line(p, changes[p]) for p in paths)
    status, err = _git_stdin(repo, ["update-index", "-z", "--index-info"], info)
    if status != 0:
        if (held := lock_held(err)) is not None:
            raise held
        return True, err.strip() or f"update-index exited {status}"
    _remove(repo, sorted(deleted))  # first: a folder that becomes a file must be gone before it is written
    status, err = _checkout(repo, [p for p in paths if changes[p] is not None])
    if status != 0:  # put index and files back: nothing of this move may remain
        _git_stdin(
            repo,
            ["update-index", "-z", "--index-info"],
            b"".join(_index_line(p, before.get(p)) for p in paths),
        )
        _checkout(repo, [p for p in paths if before[p] is not None])
        return True, err.strip() or f"checkout-index exited {status}"
    return True, None


def _checkout(repo: Repo, paths: list[str]) -> tuple[int, str]:
    """Write `paths` from the index to the work tree, recording their stat data in the index."""
    if not paths:
        return 0, ""
    data = b"".join(p.encode("utf-8", "surrogateescape") + b"\0" for p in paths)
    return _git_stdin(repo, ["checkout-index", "-f", "-u", "-z", "--stdin"], data)


def _index_line(path: str, entry: tuple[int, str] | None) -> bytes:
    mode, oid = entry if entry is not None else (0, "0" * 40)
    return b"%o %s\t%s\0" % (mode, oid.encode(), path.encode("utf-8", "surrogateescape"))


def _remove(repo: Repo, paths: list[str]) -> None:
    """Delete removed files, and the folders they leave empty (as read-tree does)."""
    assert repo.working_dir is not None
    top = Path(repo.working_dir)
    for path in paths:
        target = top / path
        target.unlink(missing_ok=True)
        folder = target.parent
        while folder != top:
            try:
                folder.rmdir()
            except OSError:
                break
            folder = folder.parent
