"""`michi init --agents`: a short, marked section in AGENTS.md telling coding agents to use michi.

Only the marked section is michi's: the file is created if absent, the section replaced on a re-run, and
every byte outside the markers is kept as it was.
"""

from __future__ import annotations

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
stop when the `no_ready_task` error says `open: 0`. (Written by `michi init --agents`; a re-run
replaces this section.)
{END}
"""


def write(root: Path) -> tuple[Path, str]:
    """Write the section into `root`/AGENTS.md; returns the path and what happened (created, added,
    replaced or unchanged)."""
    path = root / NAME
    try:
        old = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        write_atomic(path, SECTION.encode())
        return path, "created"
    start, end = old.find(START), old.find(END)
    if (start < 0) != (end < 0) or end < start:
        raise UsageError(
            f"{NAME} has a broken michi section (one marker without the other)",
            hint=f"remove the stray {START} / {END} line, then run 'michi init --agents' again",
        )
    if start < 0:
        new, what = old + ("" if old.endswith("\n") or not old else "\n") + "\n" + SECTION, "added"
    else:
        stop = end + len(END)
        stop += 1 if old[stop : stop + 1] == "\n" else 0
        new, what = old[:start] + SECTION + old[stop:], "replaced"
    if new == old:
        return path, "unchanged"
    write_atomic(path, new.encode(), mode=path.stat().st_mode & 0o777)
    return path, what
