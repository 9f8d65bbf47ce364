"""Blobs, trees and commits: read through the persistent `cat-file`, written in Python (ADR 0004)."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

from michi.errors import Conflict
from michi.git.core import _must, _must_records, config_values
from michi.git.repo import Repo

EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"


BLOB_MODE = 0o100644


TREE_MODE = 0o040000


class NotMichisPath(Conflict):
    """A strict tree edit would replace, delete or write through something that is not a plain file of
    michi's (a folder, a symlink, a submodule): michi's commits never touch the user's files (ADR 0004)."""

    code = "not_michis_path"


@dataclass(frozen=True)
class CommitMeta:
    tree: str
    parents: tuple[str, ...]
    headers: tuple[bytes, ...]  # author, committer, encoding...: every header but tree, parent, gpgsig
    message: bytes
    signed: bool = False  # had a gpgsig header: rewriting it would drop the signature


def tree_of(repo: Repo, commit: str) -> str:
    return read_commit(repo, commit).tree


def _is_task_file(path: str) -> bool:
    """`<domain>/.tasks/<uuid>.json` (flat) or `<domain>/.tasks/<uuid[:2]>/<uuid>.json` (fan-out): both
    layouts are read everywhere (ADR 0006). The fan-out folder must be the name's first two characters,
    lowercase hex (as the hook's pathspecs), so nothing else of the user's under `.tasks/` is a task."""
    parts = path.split("/")
    if not parts[-1].endswith(".json"):
        return False
    if len(parts) >= 2 and parts[-2] == ".tasks":
        return True
    folder = parts[-2] if len(parts) >= 3 and parts[-3] == ".tasks" else ""
    return len(folder) == 2 and parts[-1][:2] == folder and all(c in _HEX for c in folder)


_HEX = "0123456789abcdef"


# One `ls-tree -r -z` record: a task file's (`_is_task_file`, tested equal) or any other, whole, so each
# match starts where a record does. One regex over 50,000 records instead of a Python loop (ADR 0015).
# The folders before `.tasks/` are tried one at a time from the left (`*?` of whole names): ~20% quicker
# at 50,000 than `(?:[^\0]*/)?`, which ran to the record's end and backed off a character at a time.
_LS_RECORD = re.compile(
    r"([0-7]+) blob ([0-9a-f]+)\t((?:[^\0/]*/)*?\.tasks/(?:([0-9a-f]{2})/(?=\4))?[^/\0]*\.json)\0"
    r"|[^\0]*\0"
)


def ls_task_files(repo: Repo, tree: str) -> dict[str, str]:
    """Every task file in `tree`, either layout: path -> blob oid (one git process), or `odd_blob` for a
    symlink (or any entry that is not a plain file) at a task file's path. Its output is matched a
    block at a time as git writes it, git listing on one core while this process matches on the
    other (the listing and the match took ~0.05 s and ~0.1 s one after the other at 50,000: ADR 0015)."""
    found: dict[str, str] = {}
    for block in _must_records(repo, "ls-tree", "-r", "-z", "--full-tree", tree):
        found.update(
            {
                path: oid if mode in _PLAIN_TEXT else odd_blob(int(mode, 8), oid)
                for mode, oid, path, _ in _LS_RECORD.findall(block)
                if oid
            }
        )
    return found


_PLAIN_TEXT = ("100644", "100755")


def odd_blob(mode: int, oid: str) -> str:
    """What the task file listings give for a blob at a task file's path that is no plain file (a symlink,
    whose blob is the text of its target): `<mode>:<oid>`, never read as a task (ADR 0006), and a key
    other than its blob's, so a file that becomes a symlink with the same bytes is seen to change."""
    return f"{mode:o}:{oid}"


def diff_trees(repo: Repo, old: str, new: str) -> dict[str, tuple[int, str] | None]:
    """Paths that differ between two trees or commits: path -> (mode, blob oid), None when deleted."""
    known = repo.known_diff(old, new)
    if known is not None:
        return known
    return {path: after for path, (_before, after) in diff_moves(repo, old, new).items()}


def diff_moves(
    repo: Repo, old: str, new: str
) -> dict[str, tuple[tuple[int, str] | None, tuple[int, str] | None]]:
    """Paths that differ between two trees or commits: path -> (entry in old, entry in new), each
    (mode, blob oid) or None where the path is absent (one git process)."""
    out = _must(repo, "diff-tree", "-r", "-z", "--no-renames", old, new)
    fields = out.split("\0")
    moves: dict[str, tuple[tuple[int, str] | None, tuple[int, str] | None]] = {}
    for meta, path in zip(fields[0::2], fields[1::2], strict=False):
        if not meta.startswith(":"):
            continue
        old_mode, new_mode, old_oid, new_oid, status = meta[1:].split(" ")
        moves[path] = (
            None if status == "A" else (int(old_mode, 8), old_oid),
            None if status == "D" else (int(new_mode, 8), new_oid),
        )
    return moves


def diff_task_files(repo: Repo, old_tree: str, new_tree: str) -> dict[str, str | None]:
    """Task files that differ between two trees: path -> blob oid, None when deleted. No git process
    when michi built `new_tree` from `old_tree` itself lately (`michi.git.deltas`)."""
    from michi.git.deltas import recall_delta

    known = recall_delta(repo, old_tree, new_tree)
    changes = known if known is not None else diff_trees(repo, old_tree, new_tree)
    return {
        p: (None if c is None else c[1] if c[0] in _PLAIN else odd_blob(*c))
        for p, c in changes.items()
        if _is_task_file(p)
    }


def read_blob(repo: Repo, oid: str) -> bytes:
    return repo.read_object(oid)


def iter_blobs(repo: Repo, oids: Sequence[str], limit: int | None = None) -> Iterator[tuple[str, bytes]]:
    """(oid, content) in the order of `oids`, as git sends them: the caller parses one while git reads
    the next (`Repo.cat_stream`). `limit`: a blob larger is cut to its first `limit + 1` bytes."""
    if len(oids) < _STREAM_FROM:
        return ((oid, repo.read_object(oid, limit)) for oid in oids)
    return repo.cat_stream(oids, limit)


_STREAM_FROM = 64


def _store(repo: Repo, kind: bytes, data: bytes) -> str:
    """Write a loose object in Python: `git hash-object` per object would be four processes inside the
    lock for every transaction (ADR 0004)."""
    return repo.store(kind, data)


def write_blob(repo: Repo, data: bytes) -> str:
    """Write a blob object in Python (no git process inside the lock)."""
    return _store(repo, b"blob", data)


def write_blobs(repo: Repo, contents: Sequence[bytes]) -> list[str]:
    """Blob objects for `contents`, their oids in order: loose objects for a few, one pack for many
    (an import chunk's 10,000 files: `michi.git.pack`)."""
    if len(contents) < _STREAM_FROM or repo.batching:  # a batch packs them with its trees and commit
        return [write_blob(repo, data) for data in contents]
    from michi.git.pack import write_pack

    return write_pack(repo, ((b"blob", data) for data in contents))


def _raw_entries(repo: Repo, tree: str | None) -> dict[bytes, bytes]:
    """A tree object's entries as raw bytes, keyed by name. Parsing `<mode> <name>\\0<sha>` with
    bytes.index is ~10x faster than GitPython's per-entry decoding, which matters for a `.tasks`
    folder of 10,000 files that every transaction rewrites (`bench/run.py tasks`)."""
    if tree is None or tree == EMPTY_TREE:
        return {}
    return _parse_entries(repo.read_object(tree))


def _parse_entries(raw: bytes) -> dict[bytes, bytes]:
    entries: dict[bytes, bytes] = {}
    i, size = 0, len(raw)
    while i < size:
        nul = raw.index(b"\0", i)
        name = raw[raw.index(b" ", i) + 1 : nul]
        entries[name] = raw[i : nul + 21]
        i = nul + 21
    return entries


def _entry(name: bytes, mode: int, oid: str) -> bytes:
    return b"%o %s\0" % (mode, name) + bytes.fromhex(oid)


def _entry_mode_oid(entry: bytes) -> tuple[int, str]:
    return int(entry[: entry.index(b" ")], 8), entry[-20:].hex()


def _write_raw_tree(repo: Repo, entries: dict[bytes, bytes]) -> str:
    # git sorts tree entries by name, with a sub-tree's name compared as if it ended in '/'. A folder of
    # files only (an import's 256 fan-out folders of ~200 tasks, each chunk) sorts by name alone: ~3x
    # quicker than a key per entry (ADR 0015). Only a tree's mode begins with "4" (40000).
    if not [e for e in entries.values() if e[0] == 0x34]:
        return _store(repo, b"tree", b"".join([e for _n, e in sorted(entries.items())]))

    def key(item: tuple[bytes, bytes]) -> bytes:
        return item[0] + b"/" if item[1].startswith(b"40000 ") else item[0]

    return _store(repo, b"tree", b"".join(e for _n, e in sorted(entries.items(), key=key)))


_PLAIN = (BLOB_MODE, 0o100755)
_KINDS = {
    BLOB_MODE: "a file",
    0o100755: "a file",
    TREE_MODE: "a folder",
    0o120000: "a symlink",
    0o160000: "a submodule",
}


def _refuse(where: str, mode: int, doing: str) -> NotMichisPath:
    return NotMichisPath(
        f"refusing to {doing}: {where} is {_KINDS.get(mode, 'something else')} on the task branch, "
        "and michi only writes its own task files",
        hint="that path is not michi's: move it out of the tasks folder (git mv) or remove it from the "
        "branch (git rm), then run the command again; a new task can also go to another --domain",
        path=where,
    )


def edit_tree(
    repo: Repo,
    tree: str | None,
    changes: Mapping[str, tuple[int, str] | None],
    *,
    strict: bool = True,
    prefix: str = "",
    seen: dict[str, tuple[int, str] | None] | None = None,
) -> str:
    """A new tree: `tree` with each path set to (mode, blob oid) or removed (None). Empty folders vanish.

    `strict` (michi's own commits): only plain files are written or removed; a folder, symlink or
    submodule in the way raises `NotMichisPath` instead of being replaced, deleted or written through.
    Replaying a user's commit passes `strict=False`: its changes are the user's own.
    `seen`, when given, gets each changed path's entry in `tree` (None where it had no file): the trees
    are read here anyway, so moving the checkout needs no git process to learn them (ADR 0015)."""
    entries = _raw_entries(repo, tree)
    nested: dict[bytes, dict[str, tuple[int, str] | None]] = {}
    set_here: set[bytes] = set()
    for path, change in changes.items():
        first, sep, rest = path.partition("/")
        # Paths come from git as str with surrogate escapes; this gives back git's exact bytes.
        name = first.encode("utf-8", "surrogateescape")
        if sep:
            nested.setdefault(name, {})[rest] = change
            continue
        current = entries.get(name)
        if strict and current is not None and _entry_mode_oid(current)[0] not in _PLAIN:
            doing = f"{'delete' if change is None else 'write'} {prefix}{first}"
            raise _refuse(prefix + first, _entry_mode_oid(current)[0], doing)
        if seen is not None:
            was = _entry_mode_oid(current) if current is not None else None
            seen[prefix + first] = was if was is not None and was[0] != TREE_MODE else None
        if change is None:
            entries.pop(name, None)
        else:
            entries[name] = _entry(name, change[0], change[1])
            set_here.add(name)
    for name, sub_changes in nested.items():
        if name in set_here:
            if strict:
                where = prefix + name.decode("utf-8", "surrogateescape")
                raise _refuse(where, BLOB_MODE, f"write {where} and {where}/{next(iter(sub_changes))}")
            continue  # a folder that became a file: the file replaces it, and its contents go with it
        current = entries.get(name)
        sub_tree = None
        if current is not None:
            mode, oid = _entry_mode_oid(current)
            if strict and mode != TREE_MODE:
                where = prefix + name.decode("utf-8", "surrogateescape")
                raise _refuse(where, mode, f"change {where}/{next(iter(sub_changes))}")
            sub_tree = oid if mode == TREE_MODE else None
        sub_prefix = f"{prefix}{name.decode('utf-8', 'surrogateescape')}/"
        new_sub = edit_tree(repo, sub_tree, sub_changes, strict=strict, prefix=sub_prefix, seen=seen)
        if new_sub == EMPTY_TREE:
            entries.pop(name, None)
        else:
            entries[name] = _entry(name, TREE_MODE, new_sub)
    return _write_raw_tree(repo, entries) if entries else EMPTY_TREE


def remember_edit(
    repo: Repo,
    old: str,
    new: str,
    changes: Mapping[str, tuple[int, str] | None],
    seen: Mapping[str, tuple[int, str] | None],
) -> None:
    """Tell `repo` that strict `edit_tree(old, changes, seen=seen)` made `new`: `diff_trees(old, new)` is
    then the changes that changed something, with no git process (ADR 0015)."""
    repo.remember_diff(old, new, {p: after for p, after in changes.items() if seen[p] != after})


def read_path(repo: Repo, tree: str, path: str, limit: int | None = None) -> bytes | None:
    """A file's content at `path` in `tree`, through the persistent `cat-file --batch` (no tree parsing);
    with `limit`, at most its first `limit + 1` bytes (`Repo.cat`)."""
    found = repo.cat(f"{tree}:{path}", limit)
    return found[1] if found is not None and found[0] == b"blob" else None


def path_kind(repo: Repo, tree: str, path: str) -> str | None:
    """ "blob" (a file or symlink), "tree", "commit" (a submodule), or None when `path` is not in `tree`:
    from its parent's entry, never from the object itself (a `.tasks` tree may hold 10,000 entries). The
    trees on the way are the ones a commit changing a file under `path` reads anyway (`edit_tree`): read
    through the persistent `cat-file --batch` and kept, unless this process holds them already (an import
    asks for 257 folders per chunk, in trees the last chunk wrote). A `cat-file --batch-check` of its own
    would cost a git process for `task add`'s one question (ADR 0016)."""
    parts = path.encode("utf-8", "surrogateescape").split(b"/")
    at: str | None = tree
    for depth, name in enumerate(parts):
        if at is None:
            return None  # a file on the way: nothing under it
        raw = repo.cached_tree(at)
        if raw is None:
            found = repo.cat(at)
            if found is None or found[0] != b"tree":
                return repo.kind(f"{tree}:{path}")  # not a tree here: let git say what it makes of it
            raw = found[1]
        entry = _parsed_tree(at, raw).get(name)
        if entry is None:
            return None
        mode, oid = _entry_mode_oid(entry)
        if mode == _GITLINK:
            if depth == len(parts) - 1:
                # A submodule, whether its commit is in this repository or not (git says "missing" then,
                # as of nothing there): michi must not write through it (`room_for`, ADR 0006).
                return "commit"
            return repo.kind(f"{tree}:{path}")  # under a submodule: git says what it makes of it
        if depth == len(parts) - 1:
            return "tree" if mode == TREE_MODE else "blob"
        at = oid if mode == TREE_MODE else None
    return None


_GITLINK = 0o160000
_PARSED: dict[str, dict[bytes, bytes]] = {}  # the last few trees `path_kind` walked, parsed


def folder_files(repo: Repo, tree: str, folder: str) -> list[tuple[str, str]] | None:
    """The files directly in `folder` of `tree` (a path without a trailing slash) as (path, object id), as
    `git ls-tree <tree> -- <folder>/` lists its blobs (plain, executable, symlink); None when `folder` is
    not a folder there, or a tree on the way is not one git would read. Read as `path_kind` reads: the
    trees on the way are the ones the commit's edit read, so a staged move's splice asks no git process
    of its own (ADR 0015). Ids of either width."""
    at = tree
    for name in folder.encode("utf-8", "surrogateescape").split(b"/"):
        found = [e for e in _tree_entries(repo, at) or [] if e[0] == name]
        if len(found) != 1 or _kind(found[0][1]) != TREE_MODE:
            return None
        at = found[0][2]
    entries = _tree_entries(repo, at)
    if entries is None:
        return None
    return [
        (f"{folder}/{name.decode('utf-8', 'surrogateescape')}", oid)
        for name, mode, oid in entries
        if _kind(mode) in _BLOB_KINDS
    ]


def _tree_entries(repo: Repo, oid: str) -> list[tuple[bytes, int, str]] | None:
    """A tree's entries (name, mode, object id) in its order; None when `oid` is not a tree, or not one
    git reads (a mode not in octal digits, an empty name or one holding a slash, an id cut short)."""
    raw = repo.cached_tree(oid)
    if raw is None:
        found = repo.cat(oid)
        if found is None or found[0] != b"tree":
            return None
        raw = found[1]
    width = len(oid) // 2
    entries: list[tuple[bytes, int, str]] = []
    at = 0
    while at < len(raw):
        space, nul = raw.find(b" ", at), raw.find(b"\0", at)
        mode, name, end = raw[at:space], raw[space + 1 : nul], nul + 1 + width
        if not 0 <= space < nul or end > len(raw) or not mode or mode.strip(b"01234567"):
            return None
        if not name or b"/" in name:
            return None
        entries.append((name, int(mode, 8), raw[nul + 1 : end].hex()))
        at = end
    return entries


def _kind(mode: int) -> int:
    """What git takes an entry of `mode` for (its `canon_mode`): a file's or symlink's type, a folder, or
    else a submodule."""
    kind = mode & 0o170000  # stat's S_IFMT
    return kind if kind in (*_BLOB_KINDS, TREE_MODE) else _GITLINK


_BLOB_KINDS = (0o100000, 0o120000)  # a file (plain or executable) and a symlink: git's blobs


def _parsed_tree(oid: str, raw: bytes) -> dict[bytes, bytes]:
    found = _PARSED.get(oid)
    if found is None:
        if len(_PARSED) >= 8:
            _PARSED.clear()
        found = _PARSED[oid] = _parse_entries(raw)
    return found


def read_commit(repo: Repo, oid: str) -> CommitMeta:
    raw = repo.read_object(oid)
    header, _, message = raw.partition(b"\n\n")
    tree = ""
    parents: list[str] = []
    keep: list[bytes] = []
    lines = header.split(b"\n")
    skipping = signed = False
    for line in lines:
        if line.startswith(b" "):  # continuation of a multi-line header (gpgsig, mergetag)
            if not skipping:
                keep[-1] += b"\n" + line
            continue
        key = line.split(b" ", 1)[0]
        skipping = key in {b"gpgsig", b"gpgsig-sha256", b"mergetag"}
        signed = signed or key in {b"gpgsig", b"gpgsig-sha256"}
        if key == b"tree":
            tree = line[5:].decode()
        elif key == b"parent":
            parents.append(line[7:].decode())
        elif not skipping:
            keep.append(line)
    return CommitMeta(tree=tree, parents=tuple(parents), headers=tuple(keep), message=message, signed=signed)


def signature(repo: Repo, role: str) -> bytes:
    """`Name <email> <epoch> <tz>` as git writes it, honouring GIT_AUTHOR_*/GIT_COMMITTER_* and config."""
    import time

    name, email = identity(repo, role)
    offset = -time.timezone if not time.localtime().tm_isdst else -time.altzone
    sign = "+" if offset >= 0 else "-"
    tz = f"{sign}{abs(offset) // 3600:02d}{abs(offset) % 3600 // 60:02d}"
    return f"{name} <{email}> {int(time.time())} {tz}".encode()


def identity(repo: Repo, role: str) -> tuple[str, str]:
    """(name, email) for `role` (author or committer): the GIT_<ROLE>_NAME/EMAIL environment, else
    user.name/user.email from git's config, else `user@host` as GitPython made it."""
    import os

    env = os.environ
    prefix = f"GIT_{role.upper()}_"
    if f"{prefix}NAME" in env and f"{prefix}EMAIL" in env:
        return env[f"{prefix}NAME"], env[f"{prefix}EMAIL"]
    config = config_values(repo)
    default = _default_user()
    name = env.get(f"{prefix}NAME") or config.get("user.name") or default.split("@")[0]
    email = env.get(f"{prefix}EMAIL") or config.get("user.email") or default
    return name, email


def _default_user() -> str:
    import getpass
    import platform

    try:
        user = getpass.getuser()
    except Exception:  # no login name (containers): what GitPython falls back to as well
        user = "UNKNOWN"
    return f"{user}@{platform.node()}"


def write_commit(
    repo: Repo, tree: str, parents: Sequence[str], headers: Sequence[bytes], message: bytes
) -> str:
    lines = [b"tree " + tree.encode(), *(b"parent " + p.encode() for p in parents), *headers]
    return _store(repo, b"commit", b"\n".join(lines) + b"\n\n" + message)


def warm_up(repo: Repo, commit: str | None) -> None:
    """Pay the one-time costs (starting the persistent `git cat-file --batch`) before the lock is
    taken, so the critical section only does the work itself (ADR 0002)."""
    if commit is not None:
        read_commit(repo, commit)
