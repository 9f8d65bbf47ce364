"""`Filter.pick` (the rows `list` shows): the rows whose fields `_plain` accepts, in table order, whatever
the filter (ADR 0015: the usual domain and state filters are checked in C)."""

from __future__ import annotations

import itertools
import random

from michi.tasks.model import OPEN_STATES, STATES
from michi.tasks.query import Filter
from michi.tasks.table import COL, COLUMNS


def test_picked_rows_are_those_the_filter_accepts() -> None:
    rng = random.Random(3)
    count = 400
    table = tuple([None] * count for _ in COLUMNS)
    for i in range(count):
        table[COL["domain"]][i] = rng.choice([".", "a", "a/b"])
        table[COL["state"]][i] = rng.choice(STATES)
        table[COL["tags"]][i] = tuple(rng.sample(["x", "y", "next"], rng.randint(0, 2)))
        table[COL["project"]][i] = rng.choice([None, "p", "p.q", "pq"])
        table[COL["assignee"]][i] = rng.choice([None, "bot", "me"])
    filters = itertools.product(
        [None, ".", "a", "nowhere"], [(), OPEN_STATES, ("done",)], [(), ("x",)], [None, "p"], [None, "bot"]
    )
    seen = set()
    for domain, states, tags, project, assignee in filters:
        flt = Filter(domain, states, tags, project, assignee)
        fields = ("domain", "state", "tags", "project", "assignee")
        rows = zip(*(table[COL[name]] for name in fields), strict=True)
        wanted = [i for i, row in enumerate(rows) if flt._plain(*row)]
        assert flt.pick(table) == wanted
        seen.add(len(wanted))
    assert 0 in seen and count in seen and len(seen) > 20
