"""Domains (record 77): the folder whose `.tasks/` holds a task. Paths are repo-relative, '.' for the root.

A domain never leaves the repository: `..` that climbs out, absolute paths elsewhere and symlinks are
refused (exit 2), because the task branch stores plain paths and a symlinked domain would write elsewhere.
So is a folder named as git refuses to check out (`.git` in any spelling: `michi.git.names`), which a
Linux work tree can hold but no clone could check out once a task file is committed under it, and the
repository's git dir or common dir under any name (`git clone --separate-git-dir` into the work tree).
Its `.tasks` must be a real folder (or not exist yet): a user's file or symlink named `.tasks` is not
michi's, and writing a task there would replace it (ADR 0006).

Two layouts of task files are read everywhere (ADR 0006): flat `<domain>/.tasks/<uuid>.json` (legacy) and
fan-out `<domain>/.tasks/<uuid[:2]>/<uuid>.json`, which keeps each commit's tree edits small at 50,000
tasks (ADR 0015). New tasks get the layout the repository declares in `.michi/layout`; a task already
there keeps its path until `michi migrate` moves it. A domain never contains a `.tasks` folder, so the
fan-out folder (inside `.tasks/`) can never be taken for a domain (a folder holding `.tasks/`). A layout
this michi does not know (a newer michi's) is refused by every command (`unknown_layout`).
"""

from __future__ import annotations

import os
import re
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from michi.errors import UsageError
from michi.git.names import HFS_IGNORED, git_refuses
from michi.tasks.errors import BadDomain

if TYPE_CHECKING:
    from michi.workflow.mutation import TaskTree

ROOT = "."


FLAT = "flat"
FANOUT = "fanout"
LAYOUTS = (FLAT, FANOUT)
LAYOUT_PATH = ".michi/layout"  # committed by michi: "fanout\n"; absent = flat, unknown = refused
LAYOUT_BYTES = 64  # a layout file is read at most this far: a larger one names no layout michi knows
_LAYOUT_NAME = re.compile(r"[a-z][a-z0-9_-]*")  # how a layout is named, by this michi or a newer one


def task_path(domain: str, uuid: str, layout: str = FLAT) -> str:
    folder = ".tasks" if domain == ROOT else f"{domain}/.tasks"
    return f"{folder}/{uuid[:2]}/{uuid}.json" if layout == FANOUT else f"{folder}/{uuid}.json"


_UUID_NAME = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\.json")


def uuid_named(path: str) -> bool:
    """Is the file at `path` named `<uuid>.json`, as michi names a task's file? Another tool's `.tasks/`
    folder may hold other `.json` files (`cafe-config.json`): never moved, nor taken for tasks (ADR 0006)."""
    return _UUID_NAME.fullmatch(path, path.rfind("/") + 1) is not None


def other_layout(path: str) -> tuple[str]:
    """The same task file's path in the other layout: `task log` follows a task across `michi migrate`."""
    folder, name = path.rsplit("/", 1)
    uuid = name.removesuffix(".json")
    is_fan = folder.endswith(f".tasks/{uuid[:2]}")
    return (task_path(domain_of(path), uuid, FLAT if is_fan else FANOUT),)


class UnknownLayout(UsageError):
    """The task branch declares a layout this michi does not know: a newer michi's (ADR 0006)."""

    code = "unknown_layout"


def layout_of(raw: bytes | None) -> str:
    """The layout a `.michi/layout` file declares; an absent (or empty) one reads as flat, as in
    repositories made before the marker. An unknown one is refused (`UnknownLayout`): read as flat, an
    older michi would miss a newer layout's tasks and write new ones where the newer michi never looks."""
    text = (raw or b"").decode("utf-8", "replace").strip()
    if not text:
        return FLAT
    if text not in LAYOUTS and not _LAYOUT_NAME.fullmatch(text):
        # A name no michi writes (a symlink's target, `../x`, or a hand edit): no newer michi reads it either.
        raise UnknownLayout(
            f"{LAYOUT_PATH} on the task branch holds {text[:40]!r}, no layout name: a symlink or an edit "
            "where michi's one-line file belongs",
            hint=f"replace it by a plain file: 'git rm {LAYOUT_PATH}', commit and push, then 'michi migrate' "
            "writes it again",
            layout=text[:40],
        )
    if text not in LAYOUTS:
        raise UnknownLayout(
            f"this repository uses task layout {text[:40]!r}, newer than this michi: upgrade michi",
            hint=f"install a michi that knows the layout {LAYOUT_PATH} names on the task branch, then retry",
            layout=text[:40],
        )
    return text


def check_layout(tree: TaskTree) -> str:
    """The layout `tree` declares, or `UnknownLayout`: asked by every read of a snapshot and before the
    lock of a transaction that reads one (one object read on git's running `cat-file`); `add`, `import`,
    `migrate` and `init` ask on the fresh tree too."""
    return layout_of(tree.read(LAYOUT_PATH, limit=LAYOUT_BYTES))


def domain_of(path: str) -> str:
    """The domain of a task file's path, either layout (string search: `list` calls this per task)."""
    cut = path.rfind("/.tasks/")
    return path[:cut] if cut >= 0 else ROOT


# michi's own names at the root: its counters' folder, and the repo lock's folder (ADR 0003), which a
# task file committed under it would recreate in every clone's checkout, as a lock held by no one.
_ROOT_NAMES = frozenset({".michi", ".michi.lock"})


def _michis(name: str) -> str:
    """`name` as a case-insensitive file system (macOS, Windows) takes it: `.TASKS` is `.tasks` there."""
    return name.casefold().translate(HFS_IGNORED).rstrip(". ")


def _relative(top: Path, target: Path, shown: str) -> str:
    try:
        rel = target.relative_to(top)
    except ValueError:
        raise BadDomain(
            f"domain {shown!r} is outside the repository", hint="pass a folder inside it"
        ) from None
    parts = rel.parts
    if any(_michis(part) == ".tasks" or git_refuses(part) for part in parts) or (
        parts and _michis(parts[0]) in _ROOT_NAMES
    ):
        raise BadDomain(f"domain {shown!r} is not a folder for tasks", hint="pass a project folder")
    return ROOT if not parts else "/".join(parts)


def _no_symlinks(top: Path, rel: str, shown: str) -> None:
    """Every folder on the way is this repository's own: no symlink, and no other repository (a folder
    with its own `.git`, a nested clone): a task file committed under one makes this repository track that
    folder, listing the nested repository's files as untracked here and michi's files there."""
    here = top
    for part in PurePosixPath(rel).parts if rel != ROOT else ():
        here = here / part
        if here.is_symlink():
            raise BadDomain(
                f"domain {shown!r} goes through the symlink {part!r}", hint="pass the real folder"
            )
        if os.path.lexists(here / ".git"):
            nested = here.relative_to(top).as_posix()
            raise BadDomain(
                f"domain {shown!r} is inside {nested}, another git repository (it has its own .git)",
                hint=f"run michi in that repository (cd {nested}), or pass a folder of this one",
            )


def _own_folder(top: Path, rel: str, shown: str) -> None:
    """Refuse a domain whose `.tasks` is a symlink or a file: it belongs to the user, not to michi."""
    tasks = top / rel / ".tasks"
    if tasks.is_symlink() or (tasks.exists() and not tasks.is_dir()):
        kind = "a symlink" if tasks.is_symlink() else "a file"
        where = ".tasks" if rel == ROOT else f"{rel}/.tasks"
        raise BadDomain(
            f"domain {shown!r}: {where} is {kind}, not a folder of michi's",
            hint="michi keeps tasks only in real .tasks/ folders: rename it, or pass another --domain",
        )


def _outside_git(top: Path, rel: str, shown: str) -> str:
    """`rel` when it is not git's own folder or inside it. A clone made with `--separate-git-dir` (or a
    work tree whose `.git` file names a folder in it) keeps its git dir in the work tree under another
    name than `.git`: task files there would be committed and pushed from inside the repository itself."""
    from michi.errors import MichiError
    from michi.repo import find_repo

    try:
        paths = find_repo(top)
    except MichiError:  # no repository to ask (the caller found one): nothing more to refuse here
        return rel
    target = Path(os.path.realpath(top / rel))
    for place in {Path(os.path.realpath(paths.git_dir)), Path(os.path.realpath(paths.common_dir))}:
        # Only a git dir inside the work tree: a work tree may itself lie in one (a bare clone's worktree).
        if top in place.parents and (target == place or place in target.parents):
            raise BadDomain(
                f"domain {shown!r} points into git's folder ({place.relative_to(top).as_posix()}), "
                "where michi never writes",
                hint="pass a project folder of the work tree",
            )
    return rel


def _below(top: Path, path: Path) -> Path:
    """`path` as a path under `top` when it reaches the repository through a symlink above it (macOS's
    /tmp, a linked home folder): its part below the repository is kept as given, so a symlink there is
    still seen (and refused); anything else is returned as it was."""
    if path.is_relative_to(top):
        return path
    for above in reversed(path.parents):  # outermost first: a symlink inside the repository stays seen
        if os.path.realpath(above) == str(top):
            return top / path.relative_to(above)
    return top / "." if os.path.realpath(path) == str(top) else path


def resolve(worktree: Path, cwd: Path, given: str | None) -> str:
    """`--domain PATH` (relative to cwd), else the nearest folder at/above cwd with `.tasks/`, else root.

    A path the file system refuses to look at (a name longer than it allows, a NUL byte an import file
    can hold, a folder it may not read) is `bad_domain` naming it, never a crash."""
    try:
        return _resolve(worktree, cwd, given)
    except (OSError, ValueError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        shown = given if given is not None else os.fspath(cwd)
        raise BadDomain(
            f"domain {shown[:200]!r} cannot be used: {reason}",
            hint="pass a folder the file system can look up: names of at most 255 bytes, no NUL, readable",
        ) from None


def _resolve(worktree: Path, cwd: Path, given: str | None) -> str:
    top = Path(os.path.realpath(worktree))
    if given is not None:
        if given.strip() == "":
            raise BadDomain("empty --domain", hint="pass a folder, or '.' for the repository root")
        raw = Path(
            os.path.normpath(Path(os.path.realpath(cwd)) / given)
        )  # lexical first: '..' must not hide behind a symlink
        rel = _relative(top, _below(top, raw), given)
        _no_symlinks(top, rel, given)
        if not (top / rel).is_dir():
            raise BadDomain(f"domain {given!r} is not a folder", hint="create it first, or check the path")
        _own_folder(top, rel, given)
        return _outside_git(top, rel, given)
    here = Path(os.path.realpath(cwd))
    try:
        here.relative_to(top)
    except ValueError:
        return ROOT
    for folder in (here, *here.parents):
        if (folder / ".tasks").is_symlink():
            rel = _relative(top, folder, str(folder))
            _own_folder(top, rel, rel)
        if (folder / ".tasks").is_dir():  # a user's file named .tasks is no domain: look further up
            rel = _relative(top, folder, str(folder))
            return _outside_git(top, rel, rel)
        if folder == top:
            break
    return ROOT


def resolve_imported(worktree: Path, value: object, record: str) -> str:
    """A `michi_domain` from an import file: the same checks as `--domain`, from the repository's root."""
    if value is None or value == "":
        return ROOT
    hint = "fix its michi_domain in the import file (or drop it to import into the current domain)"
    if not isinstance(value, str):
        raise BadDomain(f"import file, task {record}: michi_domain {value!r} is not a path", hint=hint)
    try:
        return resolve(worktree, worktree, value)
    except BadDomain as exc:
        raise BadDomain(f"import file, task {record}: {exc.message}", hint=hint) from None
