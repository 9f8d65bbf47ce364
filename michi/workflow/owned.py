"""The paths michi's commits may touch (ADRs 0004, 0006): task files of both layouts (flat
`.tasks/<uuid>.json`, fan-out `.tasks/<uuid[:2]>/<uuid>.json`), files in `.michi/`, and at init
`.michi.toml` and the root domain's `.tasks/.keep`. What michi writes is checked against them
(`safe_path`); a commit that bears a `Michi-Txn` but changes anything else was amended by hand, and is the
user's (`michi.workflow.local`, `michi.workflow.stranded`): never dropped as michi's, never pushed."""

from __future__ import annotations

import re
from collections.abc import Iterable

from michi.errors import MichiError
from michi.git.names import git_refuses

_MICHIS = re.compile(
    r"(?:.+/)?\.tasks/(?:[^/]+\.json|([0-9a-f]{2})/\1[^/]*\.json)|\.michi/[^/]+|\.michi\.toml|\.tasks/\.keep",
    re.DOTALL,  # a domain's folder name may hold a newline, as a file name may
)

_FANOUT_DIR = re.compile(r"\.tasks/[0-9a-f]{2}")
# The common shape, which passes every check below: folder names that cannot be ".", "..", ".tasks" or a
# name git refuses (they start with a letter, digit or "_" and hold no "~" or "\\"), then a fan-out file.
_PLAIN_TASK = re.compile(r"(?:[A-Za-z0-9_][A-Za-z0-9_.-]*/)*\.tasks/([0-9a-f]{2})/\1[0-9a-f-]*\.json")


def michis(path: str) -> bool:
    """Is `path` one michi's commits may write?"""
    if _PLAIN_TASK.fullmatch(path):
        return True
    parts = path.split("/")
    return not (
        path.startswith("/")
        or any(p in {"", ".", ".."} or git_refuses(p) for p in parts)
        or ".tasks" in parts[: -3 if _FANOUT_DIR.fullmatch("/".join(parts[-3:-1])) else -2]
        or not _MICHIS.fullmatch(path)
    )


def all_michis(paths: Iterable[str]) -> bool:
    return all(michis(p) for p in paths)


def safe_path(path: str) -> str:
    if not michis(path):
        raise MichiError(f"refusing to write {path!r}: not a file of michi's", hint="this is a bug in michi")
    return path
