"""The order of `task list` (ADR 0014): most urgent first, as `task next` chooses; `--sort` for others.

Each field sorts in its natural order (`urgency` most urgent first, `priority` H, M, L; `id`, `entry`,
`modified`, `project` ascending; `state` as the workflow runs: todo, in_progress, review, done, deleted);
`-FIELD` reverses it. Tasks without a value (no priority, no project) come last either way. Ties fall
through to the next field, then to the default order, so the order is always total.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from michi.errors import UsageError
from michi.tasks import urgency
from michi.tasks.model import STATES
from michi.tasks.table import COL, Table

FIELDS = ("urgency", "id", "entry", "modified", "priority", "project", "state")
_DESCENDING = frozenset({"urgency"})  # natural order is highest first
_RANK = {"H": 0, "M": 1, "L": 2}
_STATE_RANK = {s: n for n, s in enumerate(STATES)}
Sort = tuple[tuple[str, bool], ...]  # (field, reversed by the user)


class BadSort(UsageError):
    code = "bad_sort"


def parse(spec: str | None) -> Sort:
    """`--sort urgency`, `--sort project,-entry`; None or empty: the default (urgency)."""
    out: list[tuple[str, bool]] = []
    for word in (spec or "").split(","):
        word = word.strip()
        if not word:
            continue
        name = word.lstrip("-+")
        if name not in FIELDS:
            raise BadSort(
                f"cannot sort by {name!r}",
                hint=f"one of {', '.join(FIELDS)}, comma-separated; -FIELD reverses one",
            )
        out.append((name, word.startswith("-")))
    return tuple(out)


def _values(table: Table, urg: dict[int, float]) -> dict[str, Callable[[int], Any]]:
    """Per field: a row's value, or None when it has none."""
    ids, entry, modified = table[COL["id"]], table[COL["entry"]], table[COL["modified"]]
    prio, project, state = table[COL["priority"]], table[COL["project"]], table[COL["state"]]
    return {
        "urgency": urg.__getitem__,
        "id": lambda i: int(ids[i]),
        "entry": entry.__getitem__,
        "modified": modified.__getitem__,
        "priority": lambda i: _RANK.get(prio[i] or ""),
        "project": lambda i: project[i] or None,
        "state": lambda i: _STATE_RANK.get(state[i], len(STATES)),
    }


def arrange(table: Table, rows: list[int], sort: Sort, now: float) -> tuple[list[int], list[float]]:
    """`rows` (indices into `table`) in order, and each one's urgency at `now`."""
    entry = table[COL["entry"]]
    columns = [table[COL[name]] for name in ("fixed", "born", "due", "scheduled", "wait")]
    every = len(rows) == len(entry)  # `rows` are ascending and distinct, so they are all of them
    if every:
        terms = zip(*columns, strict=True)
    else:
        terms = zip(*([column[i] for i in rows] for column in columns), strict=True)
    scores = urgency.at_many(terms, now)
    # The default: most urgent, then the oldest, then the lowest id (what `task next` picks first). The
    # table is in id order (ties in index order), and so are `rows`: two stable sorts, by entry then by
    # urgency, each over keys of one type (which CPython compares without the generic path), leave ties
    # in that order. Sorting (urgency, entry, id) tuples compared three values a step (ADR 0015).
    entries = entry if every else [entry[i] for i in rows]
    negated = [-u for u in scores]
    place = sorted(range(len(rows)), key=entries.__getitem__)
    place.sort(key=negated.__getitem__)
    ordered = [rows[p] for p in place]
    if not sort:
        return ordered, [scores[p] for p in place]
    urg = dict(zip(rows, scores, strict=True))
    values = _values(table, urg)
    for name, flipped in reversed(sort):  # stable sorts, last key first: the first field decides
        value = values[name]
        desc = (name in _DESCENDING) != flipped
        # (has no value, value): with reverse=True the flag is inverted, so missing values stay last.
        ordered.sort(key=lambda i: _key(value(i), desc), reverse=desc)
    return ordered, [urg[i] for i in ordered]


def _key(value: Any, desc: bool) -> tuple[bool, Any]:
    missing = value is None
    return (not missing if desc else missing, 0 if missing else value)
