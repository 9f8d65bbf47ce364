"""One file's history on a ref, in one `git log` call: the audit trail behind `michi task log`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from michi.git.core import _must

if TYPE_CHECKING:
    from michi.git.repo import Repo

_RECORD, _FIELD = "\x1e", "\x00"


@dataclass(frozen=True)
class PathRevision:
    commit: str
    time: float  # committer date, seconds since the epoch
    author: str  # "Name <email>"
    message: str
    blob: str | None  # the file's content after this commit (a blob oid); None when it deleted it


def path_history(repo: Repo, ref: str, path: str, *also: str) -> list[PathRevision]:
    """Every commit on `ref` that changed `path` (or one of `also`: the same file at its other layout's
    path, ADR 0006), oldest first, with the file's blob after each. A commit that moved it from one path
    to the other deletes one and adds the other: the blob is the added one's."""
    out = _must(
        repo,
        "log",
        "--reverse",
        "--no-renames",
        "--no-abbrev",
        "--raw",
        "--format=%x1e%H%x00%ct%x00%an <%ae>%x00%B%x00",  # the separators below
        ref,
        "--",
        path,
        *also,
    )
    revisions = []
    for chunk in out.split(_RECORD)[1:]:
        commit, when, author, message, raw = chunk.split(_FIELD, 4)
        blob: str | None = None
        for line in raw.splitlines():  # ":100644 100644 <old> <new> M\t<path>"
            if line.startswith(":") and "\t" in line:
                meta = line.split("\t", 1)[0].split()
                blob = blob if meta[4].startswith("D") else meta[3]
        revisions.append(PathRevision(commit, float(when), author, message.strip(), blob))
    return revisions
