"""The task index: every task file of one tree, parsed, with lookups by id, uuid and uuid prefix.

Built from the `TaskTree` and cached under the repository's state dir keyed by content: the cache records
the tree it describes and each file's blob oid, and is brought up to date with `changed_task_files` before
it answers, so it is never stale; a cache that cannot be read or diffed is rebuilt from the files.

Changing commands need only a task's path, the ids and the highest id before the lock (ADR 0015): `light`
answers those from a second, small cache (path -> id, a tenth of the records' size), brought up to date
the same way, and loads the records only when something asks for them. The last index a process built is
kept in memory, so an apply function inside the lock only applies the fresh commit's diff to it.
"""

from __future__ import annotations

import contextlib
import marshal
import sys
import zlib
from collections.abc import Callable, Sequence
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from michi import atomic
from michi.atomic import read_regular
from michi.codestamp import stamp
from michi.tasks import blocks, idmap, laidrow, model, normal, serialization, twocore
from michi.tasks.bulk import no_gc
from michi.tasks.errors import AmbiguousId, CorruptTask, TaskNotFound
from michi.tasks.idmap import IdMap
from michi.tasks.model import Task

_T = TypeVar("_T")

if TYPE_CHECKING:  # not at run time: `list` answers from its cache without loading the workflow package
    from michi.workflow.mutation import TaskTree

# v2: the caps and checks of ADR 0006 (records v1 believed may be corrupt); v3: in parts (`dump_parts`)
CACHE_NAME = "task-index.v3"
# (tree, path -> michi_id or None for a file that does not parse, the parsing code's stamp), checksummed
IDS_NAME = "task-ids.v1"
# (tree, the highest id, the paths holding it, the paths with no id, the id map's tree, the overlay: path
# -> id of the files changed since it, the paths removed since it): what `task add` asks before the lock,
# and what `done N` needs besides one block of the id map, without loading 50,000 paths (ADR 0015).
# Checksummed like the others, and (last) the parsing code's stamp: ids another code's parser gave (a file
# it took as corrupt may be a task now, and the reverse) are never believed.
TOP_NAME = "task-ids-top.v2"  # v2: and the id map's tree and overlay (`idmap`)
# path -> (blob oid, the file's record when it parsed, the problem when it did not)
Entry = tuple[str, dict[str, Any] | None, str | None]
# The code that turns a file into its record: the index cache holds records only it would make (ADR 0008).
# (`laidrow` takes a cold list's files in michi's layout, records and rows at once: ADR 0015.)
PARSED = stamp(normal, serialization, model, laidrow, sys.modules[__name__])


def parse_file(path: str, data: bytes) -> tuple[dict[str, Any] | None, str | None]:
    try:
        return normal.loads_record(data, path), None  # normalised: what from_trusted expects
    except CorruptTask as exc:
        return None, exc.message


def not_a_file(path: str, oid: str) -> str:
    """The problem of a task file's path that git holds as no plain file (`git.odd_blob`: `<mode>:<oid>`)."""
    mode = oid.partition(":")[0]
    kind = "a symbolic link" if mode == "120000" else f"no plain file (git mode {mode})"
    return (
        f"{path}: {kind}, not a task file (task files are plain files): replace it with a real file or "
        "remove it (git rm), then commit and push"
    )


# The files this process wrote last ((path, blob oid) -> normalised record): the next build takes them
# instead of reading and parsing the blobs back, which after an import chunk is 10,000 files (ADR 0015).
# Keyed by content, so never stale; replaced by each `remember`, so it holds one change at most.
_written: dict[tuple[str, str], dict[str, Any]] = {}


def remember(records: dict[tuple[str, str], dict[str, Any]]) -> None:
    global _written
    _written = records


def parsed(
    tree: TaskTree,
    wanted: dict[str, str],
    split: bool = True,
    parse: Callable[[str, bytes], tuple[dict[str, Any] | None, str | None]] | None = None,
) -> dict[str, tuple[dict[str, Any] | None, str | None]]:
    """path -> (record, problem) of the files `wanted` (path -> blob oid), in its order. Each blob is
    parsed as git sends it (`iter_blobs`), while git reads the next on the other core (ADR 0015); half of
    them in a child process when there are many, unless `split` is false. `parse(path, data)` instead of
    `parse_file` for the blobs read (a cold list's half makes rows meanwhile: `coldtable`)."""
    one = parse_file if parse is None else parse
    done: dict[str, tuple[dict[str, Any] | None, str | None]] = {}
    unknown: dict[str, list[str]] = {}  # blob oid -> the paths that hold it
    for path, oid in wanted.items():
        record = _written.get((path, oid))
        if ":" in oid:  # no plain file: a symlink's blob is its target's path, never a task (ADR 0006)
            done[path] = (None, not_a_file(path, oid))
        elif record is None:
            unknown.setdefault(oid, []).append(path)
        else:
            done[path] = (record, None)
    if unknown:

        def read(oids: Sequence[str]) -> list[list[tuple[dict[str, Any] | None, str | None]]]:
            blobs = tree.iter_blobs(oids, model.MAX_TASK_BYTES)  # one larger is corrupt: read no further
            return [[one(path, data) for path in unknown[oid]] for oid, data in blobs]

        # Half of them parsed in a child process meanwhile, when there are many (ADR 0015).
        oids = list(unknown)
        for oid, results in zip(unknown, twocore.halves(oids, read) if split else read(oids), strict=True):
            for path, result in zip(unknown[oid], results, strict=True):
                done[path] = result
    return {path: done[path] for path in wanted}


class Index:
    def __init__(
        self,
        tree: str | None,
        entries: dict[str, Entry] | None = None,
        *,
        ids: dict[str, int | None] | None = None,
        loader: Callable[[], dict[str, Entry]] | None = None,
        ids_loader: Callable[[], dict[str, int | None]] | None = None,
        top: tuple[int, int] | None = None,
        idmap: IdMap | None = None,
        on_damage: Callable[[], object] | None = None,
    ) -> None:
        """Either `entries` (every record), or `ids` (or an `ids_loader` that reads them when asked) and a
        `loader` that reads the records when asked. `top`: (highest id, paths with no id), when known
        without the ids; `idmap`: id and name lookups without them (`on_damage` runs when it fails its
        checksums; the ids answer instead)."""
        self.tree = tree
        if entries is not None:
            self.__dict__["entries"] = entries
        self._ids = ids
        self._loader = loader
        self._ids_loader = ids_loader
        self._top = top
        self._idmap = idmap
        self._on_damage = on_damage

    @cached_property
    def entries(self) -> dict[str, Entry]:
        assert self._loader is not None
        return self._loader()

    @cached_property
    def ids(self) -> dict[str, int | None]:
        """path -> michi_id (None: the file does not parse)."""
        if self._ids is None and self._ids_loader is not None and "entries" not in self.__dict__:
            self._ids = self._ids_loader()
        if self._ids is not None and "entries" not in self.__dict__:
            return self._ids
        return {p: (e[1]["michi_id"] if e[1] is not None else None) for p, e in self.entries.items()}

    @property
    def problem_count(self) -> int:
        if self._top is not None and "ids" not in self.__dict__:
            return self._top[1]
        return sum(1 for i in self.ids.values() if i is None)

    @classmethod
    def build(cls, tree: TaskTree, cached: Index | None = None) -> Index:
        if tree.tree_oid is None:
            return cls(None, {})
        if cached is not None and cached.tree == tree.tree_oid:
            return cached
        delta: dict[str, str | None] | None = None
        if cached is not None and cached.tree is not None:
            try:
                delta = tree.changed_task_files(cached.tree)
            except Exception:  # the cached tree is gone (gc) or unreadable: rebuild from the files
                delta = None
        if delta is not None and cached is not None:
            entries = dict(cached.entries)
            wanted = {}
            moved: dict[str, Entry] = {}  # blob oid -> a removed file's parsed entry
            for path, oid in delta.items():
                if oid is None and (gone := entries.pop(path, None)) is not None and gone[1] is not None:
                    moved[gone[0]] = gone
            for path, oid in delta.items():
                if oid is not None and entries.get(path, ("",))[0] != oid:
                    if oid in moved:  # the same bytes at a new path (`michi migrate`, ADR 0006)
                        entries[path] = moved[oid]
                    else:
                        wanted[path] = oid
        else:
            old = cached.entries if cached is not None else {}
            entries, wanted = {}, {}
            for path, oid in tree.task_files().items():
                if path in old and old[path][0] == oid:
                    entries[path] = old[path]
                else:
                    wanted[path] = oid
        for path, (record, problem) in parsed(tree, wanted).items():
            entries[path] = (wanted[path], record, problem)
        index = cls(tree.tree_oid, entries)
        if cached is not None and "tasks" in cached.__dict__:
            # Task objects of unchanged files carry over: inside the lock only the diff's are built.
            before: dict[str, Task] = cached.tasks
            kept: dict[str, Task] = {}
            for path, entry in entries.items():
                made = before.get(path)
                if made is None or cached.entries[path][0] != entry[0]:
                    if entry[1] is None:
                        continue
                    made = serialization.from_trusted(entry[1])
                kept[path] = made
            index.__dict__["tasks"] = kept
        return index

    @cached_property
    def tasks(self) -> dict[str, Task]:
        """path -> task, for every file that parsed."""
        return {p: serialization.from_trusted(e[1]) for p, e in self.entries.items() if e[1] is not None}

    @cached_property
    def problems(self) -> dict[str, str]:
        return {p: e[2] for p, e in self.entries.items() if e[2] is not None}

    @cached_property
    def by_uuid(self) -> dict[str, str]:
        """uuid -> path, from file names, so a corrupt file can still be named by its uuid."""
        return {p.rsplit("/", 1)[-1][:-5]: p for p in self.ids}

    @property
    def uuid_twice(self) -> bool:
        """Does some uuid name two files (a project folder copied with its `.tasks`)? Then `by_uuid`,
        which keeps one path per uuid, must not be what a uuid is looked up in."""
        return len(self.by_uuid) != len(self.ids)

    @cached_property
    def uuid_paths(self) -> dict[str, list[str]]:
        """uuid -> every path of that name (`by_uuid` keeps one)."""
        found: dict[str, list[str]] = {}
        for path in self.ids:
            found.setdefault(path.rsplit("/", 1)[-1][:-5], []).append(path)
        return found

    @cached_property
    def by_id(self) -> dict[int, list[str]]:
        found: dict[int, list[str]] = {}
        for path, michi_id in self.ids.items():
            if michi_id is not None:
                found.setdefault(michi_id, []).append(path)
        return found

    @property
    def max_id(self) -> int:
        # Not through by_id: a dict of lists over 50,000 paths costs ~0.1 s per changing command (ADR 0015).
        if self._top is not None and "ids" not in self.__dict__:
            return self._top[0]
        return max((i for i in self.ids.values() if i is not None), default=0)

    def ids_of(self, uuids: tuple[str, ...]) -> list[int | str]:
        """Dependencies as ids for people and agents; a uuid no task file has stays a uuid. From the id
        map while it answers (a block per uuid; a name two files share is left to the ids)."""
        mapped = self._mapped(lambda found: [found.named(u) for u in uuids]) if uuids else None
        if mapped is not None and all(len(rows) <= 1 for rows in mapped):
            pairs = zip(uuids, mapped, strict=True)
            return [rows[0][1] if rows and rows[0][1] is not None else u for u, rows in pairs]
        out: list[int | str] = []
        for uuid in uuids:
            michi_id = self.ids.get(self.by_uuid.get(uuid, ""))
            out.append(uuid if michi_id is None else michi_id)
        return out

    def paths_with_id(self, wanted: int) -> list[str]:
        """A block of the id map, or one pass over the ids, no `by_id`: changing commands name one task
        (ADR 0015)."""
        if "by_id" in self.__dict__:
            return self.by_id.get(wanted, [])
        found = self._mapped(lambda found: found.with_id(wanted))
        if found is not None:
            return found
        return [path for path, michi_id in self.ids.items() if michi_id == wanted]

    def _mapped(self, ask: Callable[[IdMap], _T]) -> _T | None:
        """`ask` of the id map while the ids are not loaded; None without one, or when it is damaged:
        never believed then, the ids answer and the map is made again."""
        if self._idmap is None or "ids" in self.__dict__:
            return None
        try:
            return ask(self._idmap)
        except blocks.Damaged:
            self._idmap = None
            if self._on_damage is not None:
                self._on_damage()
            return None

    def find(self, ref: str) -> str:
        """The path of the task named by an id, a uuid or a unique uuid prefix.

        An id wins over a uuid prefix of the same digits; digits that are no task's id are tried as a uuid
        prefix, since one uuid in forty starts with eight decimal digits."""
        from michi.tasks.ids import UUID_RE

        ref = ref.strip().lower()
        paths: list[str] = []
        mapped = self._mapped(lambda found: self._lookup(ref, found))
        if mapped is not None:
            return self._one(ref, mapped)
        if ref.isascii() and ref.isdigit():  # not `²`, which isdigit() takes and int() refuses
            paths = self.paths_with_id(int(ref))
        if not paths and UUID_RE.match(ref):
            paths = [self.by_uuid[ref]] if ref in self.by_uuid else []
            if paths and self.uuid_twice:
                paths = self.uuid_paths.get(ref, paths)
        elif not paths and len(ref) >= 4 and all(c in "0123456789abcdef-" for c in ref):
            by_uuid = self.uuid_paths if self.uuid_twice else {u: [p] for u, p in self.by_uuid.items()}
            paths = [p for u, found in by_uuid.items() if u.startswith(ref) for p in found]
        return self._one(ref, paths)

    @staticmethod
    def _lookup(ref: str, found: IdMap) -> list[str]:
        """`find`'s rules on the id map: a block or two read, no path list loaded (ADR 0015)."""
        from michi.tasks.ids import UUID_RE

        paths: list[str] = []
        if ref.isascii() and ref.isdigit():
            paths = found.with_id(int(ref))
        if not paths and UUID_RE.match(ref):
            paths = [p for p in found.with_name(ref) if idmap.stem(p) == ref]
        elif not paths and len(ref) >= 4 and all(c in "0123456789abcdef-" for c in ref):
            paths = found.with_name(ref)
        return paths

    def _one(self, ref: str, paths: list[str]) -> str:
        if len(paths) > 1:
            raise AmbiguousId(f"{ref!r} names {len(paths)} tasks", hint="use more of the uuid", ref=ref)
        if not paths:
            hint = "see 'michi task list --all'"
            if self.problem_count:
                hint += f"; {self.problem_count} task file(s) could not be read, see 'michi doctor'"
            raise TaskNotFound(f"no task {ref!r}", hint=hint, ref=ref)
        return paths[0]

    def mapped_named(self, name: str) -> list[tuple[str, int | None]] | None:
        """(path, id or None) of the files named `name`, from the id map; None when it cannot answer."""
        return self._mapped(lambda found: found.named(name))

    def uuid_of(self, ref: str) -> str:
        """`get(ref)[1].uuid` (`task add --depends`): from the id map while it answers, no record read.
        A file that parses is named by its uuid (serialization refuses one that is not), and the map
        keeps no id for one that does not parse: that one is `corrupt_task`, as `get` says."""
        path = self.find(ref)
        rows = self.mapped_named(idmap.stem(path))
        if rows is None or [p for p, _i in rows] != [path]:
            return self.get(ref)[1].uuid
        if rows[0][1] is None:
            raise CorruptTask(
                f"{path}: the task file could not be read",
                hint="fix the file by hand; 'michi doctor' lists every problem",
            )
        return idmap.stem(path)

    def get(self, ref: str) -> tuple[str, Task]:
        path = self.find(ref)
        problem = self.entries[path][2]
        if problem is not None:
            raise CorruptTask(problem, hint="fix the file by hand; 'michi doctor' lists every problem")
        return path, self.tasks[path]


def load_cache(state_dir: Path) -> Index | None:
    try:
        data = memoryview(read_regular(state_dir / CACHE_NAME))
        size = int.from_bytes(data[:4], "big")
        made_by, tree, count, lengths = marshal.loads(data[4 : 4 + size])
        if made_by != PARSED:
            return None  # another code's records (a development change, another install): parse anew
        if not (isinstance(tree, str) and isinstance(count, int) and isinstance(lengths, list)):
            return None
        entries: dict[str, Entry] = {}
        at = 4 + size
        for length in lengths:
            part = marshal.loads(data[at : at + length])
            if not isinstance(part, dict):
                return None
            if entries:
                entries.update(part)
            else:
                entries = part
            at += length
        # A file cut short at a part's end would still load: the count and the size say it is whole.
        return Index(tree, entries) if len(entries) == count and at == len(data) else None
    except (OSError, ValueError, EOFError, TypeError):
        return None


def dump_parts(tree: str | None, count: int, parts: Sequence[bytes]) -> bytes:
    """The index cache's bytes: (the code's stamp, tree, number of files, each part's length) and the
    parts, each a marshalled dict path -> entry, in the tree's order. Parts let a cold read's child
    marshal its half of the records, which this process then writes without loading them (ADR 0015)."""
    return b"".join(cache_pieces(tree, count, parts))


def cache_pieces(tree: str | None, count: int, parts: Sequence[bytes]) -> list[bytes]:
    """`dump_parts`'s bytes in pieces, to be written one after the other without joining them."""
    head = marshal.dumps((PARSED, tree, count, [len(part) for part in parts]))
    return [len(head).to_bytes(4, "big"), head, *parts]


def _write(state_dir: Path, name: str, data: bytes | Sequence[bytes]) -> None:
    """Best effort and atomic (temp file, then rename): a cache that cannot be written is rebuilt later."""
    try:
        state_dir.mkdir(parents=True, exist_ok=True)
        atomic.write_cache(state_dir / name, data)
    except OSError:
        pass


def save_cache(state_dir: Path, index: Index) -> None:
    entries = index.entries
    # In pieces, not joined: the records' dump is ~17 MB at 50,000 tasks, and a join would hold it twice.
    write_cache(state_dir, cache_pieces(index.tree, len(entries), [marshal.dumps(entries)]))
    save_ids(state_dir, index.tree, index.ids)


def save_ids(state_dir: Path, tree: str | None, ids: dict[str, int | None]) -> None:
    """The ids cache of a read of every task; the first such read also makes the summary and the id
    map, which the next `task add` or `done N` would otherwise make from every id (~0.3 s at 50,000)."""
    save_checked(state_dir, IDS_NAME, (tree, ids, PARSED))
    if tree is not None and not _has_map(state_dir):
        _save_top(state_dir, tree, ids)


def _has_map(state_dir: Path) -> bool:
    try:
        base = load_checked(state_dir, TOP_NAME)[4]
    except (TypeError, IndexError):
        return False
    return isinstance(base, str) and idmap.IdMap.open(state_dir, base, {}, set()) is not None


def write_cache(state_dir: Path, data: bytes | Sequence[bytes]) -> None:
    """The index cache's bytes (`dump_parts`) written; the file of the format before, if any, removed."""
    _write(state_dir, CACHE_NAME, data)
    with contextlib.suppress(OSError):
        (state_dir / "task-index.v2").unlink()


def save_checked(state_dir: Path, name: str, value: Any, version: int = marshal.version) -> None:
    """`value` (plain builtins only) with a CRC-32 in front, for `load_checked` (ADR 0008). `version`
    2 writes no back-references: quicker for values sharing many objects with the process's others."""
    data = marshal.dumps(value, version)
    _write(state_dir, name, [zlib.crc32(data).to_bytes(4, "big"), data])  # not joined: up to 28 MB


def load_checked(state_dir: Path, name: str) -> Any:
    """What `save_checked` wrote, or None when the file is missing, truncated, damaged or unreadable: the
    checksum catches damage that would still unmarshal, so a corrupt cache is rebuilt, never believed."""
    try:
        raw = read_regular(state_dir / name)
        if len(raw) < 4 or zlib.crc32(raw[4:]) != int.from_bytes(raw[:4], "big"):
            return None
        return marshal.loads(raw[4:])
    except (OSError, ValueError, EOFError, TypeError):
        return None


# The last full index this process built or read, by state dir: inside the lock, an apply function brings
# it up to the fresh commit by its diff instead of reading the whole cache again.
_last: dict[Path, Index] = {}


def for_tree(tree: TaskTree, state_dir: Path, save: bool = True) -> Index:
    index, stale = built(tree, state_dir)
    if save and stale:
        save_cache(state_dir, index)
    return index


def built(tree: TaskTree, state_dir: Path) -> tuple[Index, bool]:
    """`for_tree` without the writing: the index, and whether its cache file needs writing (the caller
    may write it while it does something else: `list` does so while a child makes half its table)."""
    cached = _last.get(state_dir) or load_cache(state_dir)
    with no_gc():
        index = Index.build(tree, cached)
    _last[state_dir] = index
    return index, index.tree is not None and (cached is None or cached.tree != index.tree)


def light(tree: TaskTree, state_dir: Path) -> Index:
    """Paths and ids of `tree` from the small cache; the records are read only if something asks. The
    highest id, the count of files with none and the id and name lookups come from the summary and the
    id map (`TOP_NAME`, `idmap`), so a command naming one task (`task done 7`) or none (`task add`) loads
    no path list at all (ADR 0015)."""
    if tree.tree_oid is None:
        return Index(None, {})
    top = _top(tree, state_dir)
    if top is None:
        index = _light(tree, state_dir)
        _save_top(state_dir, tree.tree_oid, index.ids)
        return index
    high, none, found = top
    broken = [found is None]

    def ids() -> dict[str, int | None]:
        loaded = _light(tree, state_dir).ids
        if broken[0]:  # no usable id map: the ids, loaded anyway, make one
            _save_top(state_dir, tree.tree_oid, loaded)
        return loaded

    def damaged() -> None:
        broken[0] = True
        with contextlib.suppress(OSError):
            (state_dir / idmap.NAME).unlink(missing_ok=True)

    return Index(
        tree.tree_oid,
        ids_loader=ids,
        loader=lambda: for_tree(tree, state_dir).entries,
        top=(high, none),
        idmap=found,
        on_damage=damaged,
    )


def _save_top(state_dir: Path, tree: str | None, ids: dict[str, int | None]) -> None:
    """The summary and the id map of `tree` from all its ids."""
    high = max((i for i in ids.values() if i is not None), default=0)
    holders = [p for p, i in ids.items() if i == high] if high else []
    none = [p for p, i in ids.items() if i is None]
    if tree is not None:
        idmap.write(state_dir, tree, ids)
    with contextlib.suppress(OSError):
        (state_dir / "task-ids-top.v1").unlink(missing_ok=True)  # the summary before the id map
    save_checked(state_dir, TOP_NAME, (tree, high, holders, none, tree, {}, [], PARSED))


def _top(tree: TaskTree, state_dir: Path) -> tuple[int, int, idmap.IdMap | None] | None:
    """(highest id, files with no id, the id map) of `tree`, from `TOP_NAME` brought up by the tree's
    diff; None when it cannot say: no cache, a damaged one, or a change to a file that held the highest
    id. The id map is None when its file is missing, damaged or of another tree."""
    try:
        old_tree, high, holders, none, base, over, gone_list, made_by = load_checked(state_dir, TOP_NAME)
        if made_by != PARSED or not (isinstance(old_tree, str) and isinstance(high, int)):
            return None
        if not (isinstance(holders, list) and isinstance(none, list)):
            return None
        if not (isinstance(base, str | None) and isinstance(over, dict) and isinstance(gone_list, list)):
            return None
        gone = set(gone_list)
        if old_tree != tree.tree_oid:
            delta = tree.changed_task_files(old_tree)
            wanted = {p: oid for p, oid in delta.items() if oid is not None}
            now = {p: None if r is None else r["michi_id"] for p, (r, _x) in parsed(tree, wanted).items()}
            if any(p in delta and now.get(p) != high for p in holders):
                return None  # the highest id may have gone: only the ids can say what is highest now
            none = [p for p in none if p not in delta]
            holders = [p for p in holders if p not in delta]
            for path, found in now.items():
                if found is None:
                    none.append(path)
                elif found > high:
                    high, holders = found, [path]
                elif found == high:
                    holders.append(path)
            for path in delta:  # the overlay: what differs from the id map's tree
                if path in now:
                    over[path] = now[path]
                    gone.discard(path)
                else:
                    over.pop(path, None)
                    gone.add(path)
            if base is not None and tree.tree_oid is not None and len(over) + len(gone) > idmap.REBASE:
                base = _rebase(state_dir, tree.tree_oid, base, over, gone)
                over, gone = {}, set()
            if base is None:
                over, gone = {}, set()
            save_checked(
                state_dir, TOP_NAME, (tree.tree_oid, high, holders, none, base, over, sorted(gone), PARSED)
            )
    except Exception:  # no cache, a damaged one, or a tree gone from the repository: the ids' way
        return None
    found_map = idmap.IdMap.open(state_dir, base, over, gone) if base is not None else None
    return high, len(none), found_map


def _rebase(state_dir: Path, tree: str, base: str, over: dict[str, int | None], gone: set[str]) -> str | None:
    """The id map rewritten for `tree` from its base and overlay (its tree), None when it cannot be."""
    old = idmap.IdMap.open(state_dir, base, over, gone)
    if old is None:
        return None
    try:
        ids = old.ids()
    except blocks.Damaged:
        return None
    idmap.write(state_dir, tree, ids)
    return tree


def _light(tree: TaskTree, state_dir: Path) -> Index:
    cached = load_checked(state_dir, IDS_NAME)
    try:
        old_tree, ids, made_by = cached
        if made_by != PARSED or not (isinstance(old_tree, str) and isinstance(ids, dict)):
            raise TypeError
        if old_tree != tree.tree_oid:
            delta = tree.changed_task_files(old_tree)
            gone = [p for p, oid in delta.items() if oid is None]
            wanted = {p: oid for p, oid in delta.items() if oid is not None}
            for path in gone:
                ids.pop(path, None)
            for path, (record, _problem) in parsed(tree, wanted).items():
                ids[path] = None if record is None else record["michi_id"]
            save_checked(state_dir, IDS_NAME, (tree.tree_oid, ids, PARSED))
    except Exception:  # no cache, a damaged one, or a tree gone from the repository: the full way
        return for_tree(tree, state_dir)
    return Index(tree.tree_oid, ids=ids, loader=lambda: for_tree(tree, state_dir).entries)
