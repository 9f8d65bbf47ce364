"""The people's views at fixed widths, through rich's recording console (ADR 0014): what is shown, what
is cut, what is coloured. The data is task JSON as `list` and `show` produce it."""

from __future__ import annotations

import re
from typing import Any

import pytest
from rich.console import Console
from rich.segment import Segment

from michi.cli.views.look import relative, span
from michi.cli.views.task_card import TaskCard
from michi.cli.views.task_table import TaskTable, counts
from michi.tasks.model import tw_date

NOW = 1_800_000_000.0
ESC = re.compile(r"\x1b\[")
LONG = "Fix the login redirect loop that happens when the session cookie expires in the middle of a request"


def task(n: int, description: str = "", **fields: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "id": n,
        "uuid": f"{n:08d}-0000-4000-8000-000000000000",
        "description": description or f"task {n}",
        "status": "pending",
        "state": "todo",
        "priority": None,
        "project": None,
        "tags": [],
        "depends": [],
        "assignee": None,
        "claim_expires": None,
        "version": 1,
        "domain": ".",
        "entry": tw_date(NOW - 3 * 3600),
        "modified": tw_date(NOW - 3 * 3600),
        "start": None,
        "end": None,
        "annotations": [],
    }
    return {**base, **fields}


def sample() -> TaskTable:
    note = {"entry": tw_date(NOW - 60), "description": "n"}
    tasks = [
        task(1, LONG, priority="H", annotations=[note, note]),
        task(2, "Write the docs", state="in_progress", assignee="bot-1", claim_expires=tw_date(NOW + 300)),
        task(3, "Deploy", depends=[1], project="web"),
        task(
            4,
            "Review it",
            state="review",
            tags=["ui", "bug"],
            assignee="alice",
            claim_expires=tw_date(NOW + 3000),
        ),
    ]
    return TaskTable(tasks, NOW, [14.2, 8.1, -3.0, 2.0], [False, False, True, False], viewer="bot-1")


def text_at(renderable: Any, width: int, colour: bool = False) -> str:
    console = Console(
        width=width, record=True, color_system="truecolor" if colour else None, force_terminal=colour
    )
    console.print(renderable)
    return console.export_text(styles=colour)


def styles_of(renderable: Any, width: int) -> dict[str, str]:
    """The style each piece of text is drawn in: every word and phrase of each segment of one style."""
    console = Console(width=width, color_system="truecolor", force_terminal=True)
    found: dict[str, str] = {}
    for segment in Segment.filter_control(console.render(renderable)):
        for piece in re.split(r"\s{2,}", segment.text.strip()):
            if piece:
                found[piece] = str(segment.style or "")
    return found


@pytest.mark.parametrize("width", [60, 80, 120])
def test_every_line_fits_and_descriptions_are_cut_with_the_count_kept(width: int) -> None:
    out = text_at(sample(), width)
    lines = out.splitlines()
    assert all(len(line) <= width for line in lines), out
    row = next(line for line in lines if line.lstrip().startswith("1 "))
    assert "…" in row and row.rstrip().endswith("[2] 14.2"), row  # cut, count and urgency kept
    every = ["id", "age", "state", "pri", "project", "tags", "deps", "assignee", "description", "urg"]
    narrow = [c for c in every if c not in ("age", "deps")]  # dropped first, so descriptions keep room
    assert lines[0].split() == (narrow if width == 60 else every)
    assert [line.split()[0] for line in lines[2:]] == ["1", "2", "3", "4"]  # the order given


def test_wider_terminals_show_more_of_the_description() -> None:
    shown = [len(text_at(sample(), w).splitlines()[2].rstrip()) for w in (60, 80, 120)]
    assert shown[0] < shown[1] < shown[2]
    assert LONG in text_at(sample(), 400)  # room enough: nothing cut


def test_empty_columns_are_left_out_and_domain_only_for_several() -> None:
    plain = TaskTable([task(1), task(2)], NOW, [1.0, 0.5])
    assert text_at(plain, 80).splitlines()[0].split() == ["id", "age", "state", "description", "urg"]
    two = TaskTable([task(1, domain="."), task(2, domain="libs/auth")], NOW)
    header = text_at(two, 80).splitlines()[0].split()
    assert "domain" in header and "urg" not in header  # no urgencies given (e.g. `reap`'s table)


def test_wide_shows_descriptions_whole_within_the_width() -> None:
    wide = TaskTable(sample().tasks, NOW, sample().urgency, sample().blocked, "bot-1", wide=True)
    out = text_at(wide, 80)
    assert all(len(line) <= 80 for line in out.splitlines())
    assert "…" not in out
    assert " ".join(column(out, "description")[:7]).split() == [*LONG.split(), "[2]"]


def column(out: str, name: str) -> list[str]:
    """One column's cells, line by line, found by the dashes under its name."""
    header, dashes, *rows = out.splitlines()
    start = header.index(name)
    end = dashes.find(" ", start)
    return [row[start : end if end > 0 else None].strip() for row in rows]


def test_plain_output_has_no_escape_codes_and_dashes_under_the_header() -> None:
    out = text_at(sample(), 80)
    assert not ESC.search(out)
    assert set(out.splitlines()[1].replace(" ", "")) == {"-"}
    assert ESC.search(text_at(sample(), 80, colour=True))  # the same console in colour does colour


def test_colour_says_something() -> None:
    seen = styles_of(sample(), 120)
    assert "red" in seen["H"] and "bold" in seen["H"]  # priority H
    assert "green" in seen["in_progress"]
    assert "magenta" in seen["review"]
    assert "yellow" in seen["bot-1 (5min)"] and "bold" in seen["bot-1 (5min)"]  # own, about to expire
    assert seen["alice"] == ""  # in review: no live claim, someone else's: plain
    assert "dim" in seen["Deploy"]  # blocked
    assert "dim" not in seen["Write the docs"]
    expired = TaskTable([task(5, state="in_progress", assignee="x", claim_expires=tw_date(NOW - 1))], NOW)
    assert "red" in styles_of(expired, 80)["x (expired)"]


@pytest.mark.parametrize(
    ("states", "blocked", "line"),
    [
        (["todo"], [False], "1 task"),
        (["todo", "todo"], [True, False], "2 tasks, 1 blocked"),
        (["in_progress", "review", "todo"], [0, 1, 1], "3 tasks, 1 in progress, 1 in review, 2 blocked"),
        (["in_progress"] * 3 + ["done"], [False] * 4, "4 tasks, 3 in progress, 1 done"),
    ],
)  # fmt: skip
def test_counts_line_says_singular_and_plural_right(
    states: list[str], blocked: list[bool], line: str
) -> None:
    assert counts([task(n, state=s) for n, s in enumerate(states)], blocked) == line


def test_spans_and_relative_dates() -> None:
    assert [span(s) for s in (5, 90, 3 * 3600, 2 * 86400, 15 * 86400, 65 * 86400, 800 * 86400)] == [
        "5s", "1min", "3h", "2d", "2wk", "2mo", "2y"]  # fmt: skip
    assert relative(3 * 3600 + 5) == "3 h ago" and relative(-720) == "in 12 min"
    assert relative(2) == "just now"


def card(**extra: Any) -> TaskCard:
    t = task(12, LONG, priority="H", project="web", tags=["ui"], depends=[3], assignee="bot-1",
             state="in_progress", claim_expires=tw_date(NOW + 3000), version=3, start=tw_date(NOW - 3600),
             annotations=[{"entry": tw_date(NOW - 7200), "description": "Tried X"}])  # fmt: skip
    return TaskCard(t, NOW, viewer="bot-1", **extra)


@pytest.mark.parametrize("width", [60, 80, 120])
def test_show_groups_fields_with_dates_exact_and_relative(width: int) -> None:
    shown = card(
        depends_on=[{"id": 3, "description": "Write the schema", "state": "done"}],
        blocks=[{"id": 14, "description": "Ship it", "state": "todo"}],
        urgency=14.234,
    )
    out = text_at(shown, width)
    assert all(len(line) <= width for line in out.splitlines())
    headings = [line for line in out.splitlines() if line and not line.startswith(" ")][1:]
    assert [h for h in headings if h.islower()] == [
        "state and claim", "dates", "dependencies", "annotations", "history"]  # fmt: skip
    flat = " ".join(out.split())
    assert "entry " + tw_date(NOW - 3 * 3600)[:4] in flat and "(3 h ago)" in flat
    assert "(in 50 min)" in flat and "bot-1 (50min)" in flat and "urgency 14.23" in flat
    assert "depends on 3 Write the schema (done)" in flat and "blocks 14 Ship it (todo)" in flat
    assert "version 3: created 3 h ago, changed 2 times, last 3 h ago" in flat
    assert "(1 h ago)" in flat and "Tried X" in flat  # start, annotation


def test_show_leaves_out_groups_it_has_nothing_for() -> None:
    out = text_at(TaskCard(task(1), NOW), 80)
    assert "dependencies" not in out and "annotations" not in out and "assignee" not in out
    assert "version 1: created 3 h ago, never changed" in " ".join(out.split())
    assert not ESC.search(out)


def test_control_characters_in_task_text_never_reach_the_terminal() -> None:
    """Anyone (any agent) writes task text: an escape sequence in it must not recolour or move the
    person's terminal, a line break must not break the row, and a bidirectional override or isolate must
    not make the line read other than it is."""
    hostile = "evil\x1b[2J\x1b]0;title\x07 two\nlines\ttab \u202etxt.exe\u2066iso\u2069"
    t = task(1, hostile, project="p\x1b[31m", tags=["t\x1b"], assignee="a\x9b1m",
             annotations=[{"entry": tw_date(NOW), "description": "note\x1b[5m"}])  # fmt: skip
    for view in (TaskTable([t], NOW), TaskCard(t, NOW)):
        for colour in (False, True):
            out = text_at(view, 100, colour=colour)
            assert "\x1b[2J" not in out and "\x1b]0" not in out and "\x07" not in out and "\x9b" not in out
            assert "\x1b[31m" not in out and "\x1b[5m" not in out
            assert not any(c in out for c in "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
    assert len(text_at(TaskTable([t], NOW), 100).splitlines()) == 3  # header, dashes, one row
