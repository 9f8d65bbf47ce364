"""A cold list on two cores, one child for the whole build (ADR 0015).

With no index cache and no list cache, `list` reads every task file. The tree's task files are split in
two runs of paths; a forked child reads, checks and makes the rows (in id order) of the second while
this process does the first, and sends back its rows and its paths' ids, then its records
marshalled, which only the child writing the caches reads (`twocore.beside_then`) and writes into the
index cache as they are, never loaded. A row needs other
tasks only through depends (their ids in the JSON, blocked and blocking): each side makes its rows as if
no task had any, and when some task has depends this process loads the child's records and makes again
the rows of every task with depends or depended on, from the whole index. The two halves' rows merge
into the table `table.table_of` makes (in columns); the caches are those `index.for_tree` writes
(tested). Writing them is left to the caller, which has a child do it while it prints (`twocore.later`).

The child's answer is believed only if it unmarshals and has a row or an unreadable file, and an id, for
each of its paths; otherwise (it failed, died, or was not forked) this process does that half itself.
Its records not sent whole are made again by whoever needs them (here, or the child writing the caches).
"""

from __future__ import annotations

import marshal
from collections.abc import Callable, Sequence
from operator import itemgetter
from pathlib import Path
from typing import TYPE_CHECKING, Any

from michi.tasks import index as index_mod
from michi.tasks import laidrow, twocore
from michi.tasks import table as table_mod
from michi.tasks.bulk import no_gc
from michi.tasks.index import Entry, Index
from michi.tasks.links import Links

if TYPE_CHECKING:
    from michi.workflow.mutation import TaskTree

# This process's share of the files: half, as the child marshals its table and sends it while this
# process marshals its records (about as long: ~0.06 s at 50,000); the child's records come later.
SHARE = 0.5

# (its rows in id order, path -> id, has some task depends, unreadable files)
Half = tuple[list[tuple[Any, ...]], dict[str, int | None], bool, int]
# A row's id: an int (the records' checks), so this orders rows as `table.columns` does (`int(row[0])`).
_ID = itemgetter(0)


def built(tree: TaskTree, state_dir: Path) -> tuple[table_mod.Table, int, Callable[[], None]] | None:
    """The table of `tree`, its number of unreadable files and what writes its index cache (and ids
    cache); None when this is no case for it (an index in memory or in its cache file, too few files,
    one core): the caller then takes the usual way."""
    if tree.tree_oid is None or state_dir in index_mod._last or (state_dir / index_mod.CACHE_NAME).exists():
        return None
    files = tree.task_files()
    if not twocore.usable(len(files)):
        return None
    paths = list(files)
    middle = int(len(paths) * SHARE)
    first, second = paths[:middle], paths[middle:]
    kept: list[dict[str, Entry]] = []  # the child's records, in the child

    def there() -> bytes:
        half, entries = _half(tree, files, second)
        kept.append(entries)
        # Version 2 (no back-references): the quicker to dump and to load of the two here.
        return marshal.dumps(half, 2)

    def here() -> tuple[Half, dict[str, Entry], bytes]:
        # This side's records marshalled now, not by the child writing the caches: that child's work
        # ends after this process prints, and this half takes as long as the child's (ADR 0015).
        half, entries = _half(tree, files, first)
        return half, entries, marshal.dumps(entries)

    with no_gc(keep=True):
        # The child's records come after its table, read only by whoever writes the index cache (or
        # here, when rows must be made again): marshalling them is off the child's way (ADR 0015).
        (mine, my_entries, my_records), data, rest = twocore.beside_then(
            there, lambda: marshal.dumps(kept[0]), here
        )
        theirs = _theirs(data, len(second))
        their_entries: dict[str, Entry] | None = None
        if theirs is None or rest is None:
            theirs, their_entries = _half(tree, files, second)
            rest = None  # a table not believed vouches for no records sent after it
        table = _merged(mine[0], theirs[0])
        ids = {**mine[1], **theirs[1]}

        def records() -> dict[str, Entry]:
            """The child's records (loaded), or made here when it did not send them whole."""
            nonlocal their_entries, rest
            if their_entries is None:
                got = _records(rest.read() if rest is not None else None, theirs[1])
                if got is None:
                    rest = None
                their_entries = got if got is not None else _half(tree, files, second)[1]
            return their_entries

        if mine[2] or theirs[2]:  # some task has depends: rows that show other tasks are made again
            index = Index(tree.tree_oid, {**my_entries, **records()})
            _relink(index, table)
            index_mod._last[state_dir] = index

        def save() -> None:
            # Sent whole, the child's records are written as they came (never loaded, as its table
            # vouched for its half); else they are made here (a writer child's time only).
            sent = rest.read() if rest is not None else None
            if sent is None:
                sent = marshal.dumps(records())
            cache = index_mod.cache_pieces(tree.tree_oid, len(paths), [my_records, sent])
            index_mod.write_cache(state_dir, cache)
            index_mod.save_ids(state_dir, tree.tree_oid, ids)

        return table, mine[3] + theirs[3], save


def _half(tree: TaskTree, files: dict[str, str], paths: Sequence[str]) -> tuple[Half, dict[str, Entry]]:
    """The table of `paths` made as if no task had depends, their ids, whether one has depends and the
    number that do not parse; and the records."""
    wanted = {path: files[path] for path in paths}
    laid: dict[str, tuple[Any, ...]] = {}  # the rows made with their records (`laidrow`)

    def parse(path: str, data: bytes) -> tuple[dict[str, Any] | None, str | None]:
        got = laidrow.row(data, path, wanted[path])
        if got is None:
            return index_mod.parse_file(path, data)
        laid[path] = got[1]
        return got[0], None

    entries: dict[str, Entry] = {}
    for path, (record, problem) in index_mod.parsed(tree, wanted, split=False, parse=parse).items():
        entries[path] = (wanted[path], record, problem)
    half = Index(tree.tree_oid, entries)
    unlinked = Links(Index(None, {}))
    make, made = table_mod.row, laid.get
    rows: list[tuple[Any, ...]] = []
    ids: dict[str, int | None] = {}
    linked = False
    for path, (oid, record, _problem) in entries.items():
        if record is None:
            ids[path] = None
            continue
        ids[path] = record["michi_id"]
        row = made(path)
        if row is None:
            if record.get("depends"):
                linked = True
            row = make(path, oid, record, half, unlinked, None)
        rows.append(row)
    problems = len(entries) - len(rows)
    # Sorted here, each half on its core; transposed into columns once, merged (`_merged`, ADR 0015).
    rows.sort(key=_ID)
    return (rows, ids, linked, problems), entries


def _records(data: bytes | None, ids: dict[str, int | None]) -> dict[str, Entry] | None:
    """The child's records sent as `data`, when they unmarshal and are one entry per path of its ids."""
    if data is None:
        return None
    try:
        records = marshal.loads(data)
    except (ValueError, EOFError, TypeError):
        return None
    if not isinstance(records, dict) or len(records) != len(ids) or records.keys() != ids.keys():
        return None
    return records


def _theirs(data: bytes | None, count: int) -> Half | None:
    if data is None:
        return None
    try:
        rows, ids, linked, problems = marshal.loads(data)
    except (ValueError, EOFError, TypeError):
        return None
    if not (type(rows) is list and isinstance(ids, dict) and isinstance(linked, bool)):
        return None
    if rows and (set(map(type, rows)) != {tuple} or set(map(len, rows)) != {len(table_mod.COLUMNS)}):
        return None
    if len(ids) != count or not isinstance(problems, int) or len(rows) + problems != count:
        return None
    return rows, ids, linked, problems


def _merged(first: list[tuple[Any, ...]], second: list[tuple[Any, ...]]) -> table_mod.Table:
    """Two halves' rows (each in id order, ties in index order) as one table, `first`'s rows first among
    equal ids: the table of their rows together (`table.columns`). Rows, not columns, are merged (one
    stable sort of two sorted runs) and then transposed: permuting 18 columns of 50,000 by an
    `itemgetter` each took three times the instructions (ADR 0015)."""
    rows = first + second
    if not rows:
        return tuple([] for _ in table_mod.COLUMNS)
    rows.sort(key=_ID)
    return tuple(list(column) for column in zip(*rows, strict=True))


def _relink(index: Index, table: table_mod.Table) -> None:
    """The rows of `table` of tasks that have depends or are depended on by an open task made again
    from the whole `index`, in place."""
    links = Links(index)
    where = {path: n for n, path in enumerate(table[table_mod.COL["path"]])}
    for path, (oid, record, _problem) in index.entries.items():
        if record is not None and (record.get("depends") or record["uuid"] in links.awaited):
            n = where[path]
            for column, value in zip(
                table, table_mod.row(path, oid, record, index, links, None), strict=True
            ):
                column[n] = value
