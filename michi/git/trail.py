"""The audit trail read back: michi's commits with their `Michi-*` trailers, and how far two refs diverge.

Plain git processes (no GitPython): `michi status` and `michi watch` must stay as cheap as `task list`.
One `git log` call reads the whole history; it is parsed here in Python (ADR 0013).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from michi import shown
from michi.errors import GitFailed
from michi.git.plain import TASK_PATHSPECS, quick

# Record separator before each commit, unit separator between its fields; `-z` ends every file name
# with NUL, so paths need no unquoting whatever characters a domain folder has.
_FORMAT = "%x1e%H%x1f%ct%x1f%s%x1f%(trailers:only,unfold)%x1f"


@dataclass(frozen=True)
class LogEntry:
    commit: str
    time: float  # committer time, seconds since the epoch
    subject: str
    trailers: dict[str, str]  # Michi-Agent, Michi-Task, Michi-Txn, Michi-Host...
    files: list[tuple[str, str]] = field(default_factory=list)  # (status letter A/M/D, path)


# A commit's own record starts with its id and time; a subject may hold the separators too (anyone can
# push one), so a record is only cut where such a start follows.
_RECORD = re.compile("\x1e(?=[0-9a-f]+\x1f[0-9]+\x1f)")
# Subjects and trailers are anyone's text, shown to people (`watch`, `stats`) and parsed: no control
# character survives (`michi.shown`).
_CONTROL = re.compile(shown.NONE_KEPT_CLASS)


def _plain(text: str) -> str:
    return _CONTROL.sub(shown.REPLACED, text) if _CONTROL.search(text) else text


def _parse(out: str) -> list[LogEntry]:
    entries = []
    for chunk in _RECORD.split(out)[1:]:
        commit, _, rest = chunk.partition("\x1f")
        stamp, _, rest = rest.partition("\x1f")
        # The subject, then the trailers (neither may be trusted not to hold \x1f), then the files.
        text, _, tail = rest.rpartition("\x1f")
        subject, _, trailer_text = text.partition("\x1f")
        if not text and not tail:
            continue
        trailers: dict[str, str] = {}
        for line in trailer_text.splitlines():
            key, sep, value = line.partition(":")
            if sep and key.strip():
                trailers[_plain(key.strip())] = _plain(value.strip())
        subject = _plain(subject)
        fields = [f for f in tail.lstrip("\0\n").split("\0") if f != ""]
        files = [(fields[i][:1], fields[i + 1]) for i in range(0, len(fields) - 1, 2)]
        entries.append(LogEntry(commit, float(stamp), subject, trailers, files))
    return entries


def log_entries(
    worktree: Path,
    ref: str,
    *,
    task_files_only: bool = True,
    max_count: int | None = None,
    oldest_first: bool = True,
    michi_only: bool = False,
) -> list[LogEntry]:
    """The commits of `ref` that touch task files (every commit unless `task_files_only`) with their
    trailers, and the task files each adds (A), modifies (M) or deletes (D), in one `git log` call.
    `michi_only`: only michi's own commits. An unknown ref reads as no history."""
    args = ["log", "-z", "--no-renames", f"--format={_FORMAT}"]
    if oldest_first:
        args.append("--reverse")
    if michi_only:  # michi's own commits carry a transaction id (ADR 0004)
        args.append("--grep=^Michi-Txn: ")
    if max_count is not None:
        args.append(f"--max-count={max_count}")
    if task_files_only:
        args.append("--name-status")
    args += [ref, "--"]
    if task_files_only:
        args += TASK_PATHSPECS
    try:
        return _parse(quick(worktree, *args))
    except GitFailed as exc:  # an unborn or never-fetched branch has no history yet
        if any(m in exc.message for m in ("unknown revision", "bad revision", "does not have any")):
            return []
        raise


def ahead_behind(worktree: Path, local: str, remote: str) -> tuple[int, int]:
    """(commits on `local` not on `remote`, commits on `remote` not on `local`)."""
    out = quick(worktree, "rev-list", "--left-right", "--count", f"{local}...{remote}")
    left, _, right = out.strip().partition("\t")
    return int(left), int(right)


def commit_times(worktree: Path, oids: Sequence[str]) -> dict[str, float]:
    """Committer time of each of `oids` that exists; a missing one (gc'd after a sync) is left out."""
    times: dict[str, float] = {}
    for oid in oids:  # one process each: a journal holds a handful of entries at most
        try:
            out = quick(worktree, "show", "-s", "--no-notes", "--format=%ct", oid)
        except GitFailed:
            continue
        if out.strip():
            times[oid] = float(out.strip())
    return times
