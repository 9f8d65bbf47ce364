"""`michi init --agents`: a short, marked section in AGENTS.md telling coding agents to use michi.

Only the marked section is michi's: the file is created if absent, the section replaced on a re-run, and
every byte outside the markers is kept as it was.
"""

from __future__ import annotations

import os
from pathlib import Path

from michi.atomic import write_atomic
from michi.errors import UsageError

NAME = "AGENTS.md"
START = "<!-- michi:start -->"
END = "<!-- michi:end -->"
SECTION = f"""{START}
## Tasks: michi

This repository tracks its tasks with michi: task files live in `.tasks/` folders and change only
through michi (never by hand). Read `michi guide` first; the work loop is
`michi --json --agent NAME task next --claim`, do the work, `michi --json task done ID`, and
stop when the `no_ready_task` error's `open` equals its `stuck` (0 and 0: all done; else a person must
mend what `michi doctor` names). (Written by `michi init --agents`; a re-run replaces this section.)
{END}
"""


# Where a link may not lead, though inside the work tree: git's own folder (its config, its hooks), and
# michi's own files (which change only through michi's commits).
_NOT_THERE = {".git", ".tasks"}
_MICHIS_AT_TOP = {".michi", ".michi.toml", ".michi.lock"}


def target(root: Path) -> Path:
    """The file to write: AGENTS.md, or the file it links to when that is a file of the repository's own
    (AGENTS.md is often a link to CLAUDE.md, which must stay a link). Anything else is refused before
    anything is done: a link out of the work tree, into git's folder (a section appended to `.git/config`
    broke every git command), into a nested repository (another repository's file) or onto michi's own
    files; and anything that is not a file."""
    path = root / NAME
    top = Path(os.path.realpath(root))
    found = Path(os.path.realpath(path)) if path.is_symlink() else path
    where = _refused(top, found) if path.is_symlink() else None
    if where is None and ((found.exists() and not found.is_file()) or found.is_symlink()):
        where = "not a file"
    if where is not None:
        raise UsageError(
            f"{NAME} is {where}; michi writes its section only into a file of the repository's own",
            hint=f"replace {NAME} by a file (or a link to one in the repository), then run it again",
        )
    return found


def _refused(top: Path, found: Path) -> str | None:
    """Why a link to `found` is not one michi writes through, or None."""
    if not found.is_relative_to(top):
        return "a link out of the repository"
    parts = found.relative_to(top).parts
    if not parts or _NOT_THERE.intersection(parts) or parts[0] in _MICHIS_AT_TOP:
        return f"a link to {'/'.join(parts) or '.'}, git's or michi's own"
    for depth in range(1, len(parts)):
        if (top.joinpath(*parts[:depth]) / ".git").exists():
            return f"a link into {'/'.join(parts[:depth])}, another git repository"
    return None


def write(root: Path) -> tuple[Path, str]:
    """Write the section into `root`/AGENTS.md; returns the path and what happened (created, added,
    replaced or unchanged). The file is handled as bytes: CRLF line ends and text that is not UTF-8 outside
    the section stay as they were."""
    path = root / NAME
    found = target(root)
    section, start_mark, end_mark = SECTION.encode(), START.encode(), END.encode()
    try:
        old = found.read_bytes()
    except FileNotFoundError:
        write_atomic(found, section)
        return path, "created"
    start, end = old.find(start_mark), old.find(end_mark)
    if (start < 0) != (end < 0) or end < start:
        raise UsageError(
            f"{NAME} has a broken michi section (one marker without the other)",
            hint=f"remove the stray {START} / {END} line, then run 'michi init --agents' again",
        )
    if start < 0:
        eol = b"\r\n" if b"\r\n" in old else b"\n"
        lead = b"" if old.endswith(b"\n") or not old else eol
        new, what = old + lead + eol + section.replace(b"\n", eol), "added"
    else:
        eol = b"\r\n" if old[end + len(end_mark) : end + len(end_mark) + 2] == b"\r\n" else b"\n"
        stop = end + len(end_mark)
        stop += len(eol) if old[stop : stop + len(eol)] == eol else 0
        new, what = old[:start] + section.replace(b"\n", eol) + old[stop:], "replaced"
    if new == old:
        return path, "unchanged"
    write_atomic(found, new, mode=found.stat().st_mode & 0o777)
    return path, what
