"""The list table (ADR 0008): every task as one row of plain builtins, what `list` filters, orders and prints.

One list per column, tasks in id order (a list per column loads in about half the time of a tuple per
task). Columns: what the filters look at, each task's finished `--json` text, what a rebuild needs to reuse
that text, what `--sort` orders by, and the clock-free part of the task's urgency (ADR 0014).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from michi.tasks import twocore, urgency, viewtext
from michi.tasks.bulk import no_gc
from michi.tasks.domains import domain_of
from michi.tasks.index import Index
from michi.tasks.links import Links

COLUMNS = (
    "id",
    "domain",
    "state",
    "tags",
    "project",
    "assignee",
    "json",
    "path",
    "oid",
    "deps",
    "priority",
    "entry",
    "modified",
    "fixed",
    "born",
    "due",
    "scheduled",
    "wait",
    "flags",
)
Table = tuple[list[Any], ...]
COL = {name: n for n, name in enumerate(COLUMNS)}
# Plain numbers, not tuples: marshal makes tuples the garbage collector must track, and 20,000 of them
# doubled the time to load the cache (ADR 0014).
BLOCKED, BLOCKING = 1, 2


def row(
    path: str, oid: str, rec: dict[str, Any], index: Index, links: Links, old: tuple[Any, ...] | None
) -> tuple[Any, ...]:
    """One task's row; `old` is its row from the previous table when its blob is unchanged. Its JSON is
    reused unless it has depends (they show other tasks' ids, which only this index can tell); its urgency
    terms unless it became blocked, unblocked, blocking or not (which other tasks' changes decide)."""
    get = rec.get
    blocked, blocking = links.of(rec)
    flags = BLOCKED * blocked | BLOCKING * blocking
    has_deps = bool(get("depends"))
    domain = domain_of(path)
    if old is None:  # a cold read: 50,000 of these, so no lookups of the old row's columns
        text = viewtext.text(rec, path, index, domain)
        fixed, born, due, scheduled, wait = urgency.terms(rec, blocked=blocked, blocking=blocking)
    else:
        text = old[_JSON] if not has_deps else viewtext.text(rec, path, index, domain)
        if old[_FLAGS] == flags:
            fixed, born, due, scheduled, wait = old[_FIXED : _WAIT + 1]
        else:
            fixed, born, due, scheduled, wait = urgency.terms(rec, blocked=blocked, blocking=blocking)
    entry, tags = rec["entry"], get("tags")
    return (
        rec["michi_id"],
        domain,
        rec["michi_state"],
        tuple(tags) if tags else (),
        get("project"),
        get("michi_assignee"),
        text,
        path,
        oid,
        has_deps,
        get("priority"),
        entry,
        get("modified") or entry,
        fixed,
        born,
        due,
        scheduled,
        wait,
        flags,
    )


_JSON, _FLAGS, _FIXED, _WAIT = COL["json"], COL["flags"], COL["fixed"], COL["wait"]
# The share of a cold table's rows this process makes while a child makes the rest: less than half, as
# it also writes the index cache meanwhile (about a quarter of the rows' time at 50,000 tasks).
_SHARE = 0.4


def columns(rows: list[tuple[Any, ...]]) -> Table:
    rows.sort(key=lambda row: int(row[0]))  # by id, ties in index order
    if not rows:
        return tuple([] for _ in COLUMNS)
    return tuple(list(column) for column in zip(*rows, strict=True))  # transposed in C


def table_of(index: Index, old: Table | None, meanwhile: Callable[[], object] | None = None) -> Table:
    """Every task of `index` in the table, reusing what it can of `old` (the table it replaces).
    `meanwhile` runs once, while a child process makes part of a cold table (`twocore.halves`)."""
    reuse = {} if old is None else {path: i for i, path in enumerate(old[COL["path"]])}
    links = Links(index)
    entries = index.entries

    def rows_of(paths: Sequence[str]) -> list[tuple[Any, ...] | None]:
        rows: list[tuple[Any, ...] | None] = []
        for path in paths:
            oid, rec, _problem = entries[path]
            if rec is None:
                rows.append(None)
                continue
            i = reuse.get(path)
            prev = None
            if old is not None and i is not None and old[COL["oid"]][i] == oid:
                prev = tuple(column[i] for column in old)
            rows.append(row(path, oid, rec, index, links, prev))
        return rows

    with no_gc():
        # A cold read's 50,000 rows: half made in a child process meanwhile (ADR 0015).
        if reuse:
            if meanwhile is not None:
                meanwhile()
            made = rows_of(list(entries))
        else:
            made = twocore.halves(list(entries), rows_of, meanwhile=meanwhile, share=_SHARE)
        return columns([r for r in made if r is not None])


def table_for(index: Index, found: list[tuple[str, dict[str, Any]]]) -> Table:
    """The table of some tasks of `index` ((path, record) pairs), e.g. those `--ready` selected."""
    links = Links(index)
    return columns([row(p, index.entries[p][0], rec, index, links, None) for p, rec in found])
