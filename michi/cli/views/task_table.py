"""`task list` for people: Taskwarrior's habits (ADR 0014). Only columns some row has a value in, the
description cut to what the width leaves (annotations counted as `[2]`), colour that means something, and
a counts line. Laid out when rich renders it, at the console's width, so tests can pin any width."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, RenderResult
from rich.segment import Segment
from rich.text import Text

from michi.cli.views import style
from michi.cli.views.look import span
from michi.cli.views.style import safe
from michi.tasks.urgency import epoch

MIN_DESCRIPTION = 12  # below this a description says too little: other columns give way first
CAP = 20  # widest a project, tags, assignee or domain cell gets outside --wide
DROPPABLE = ("age", "deps", "urg")  # what a narrow terminal loses first (dimmed rows still show blocked)


@dataclass(frozen=True)
class Column:
    name: str
    cells: list[Text]
    right: bool = False
    capped: bool = False


@dataclass(frozen=True)
class TaskTable:
    tasks: list[dict[str, Any]]
    now: float
    urgency: list[float] = field(default_factory=list)
    blocked: list[bool] = field(default_factory=list)
    viewer: str | None = None  # the agent running the command: its claims stand out
    wide: bool = False
    plain: bool = False  # no colour (also when the console has none): dashes under the header

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield from self.lines(console, options.max_width, plain=self.plain or console.color_system is None)

    def columns(self) -> list[Column]:
        tasks, now = self.tasks, self.now
        blank = [Text("") for _ in tasks]
        cols = [
            Column("id", [Text(str(t["id"])) for t in tasks], right=True),
            Column("age", [Text(_age(t["entry"], now)) for t in tasks], right=True),
            Column("state", [style.state(t["state"]) for t in tasks]),
            Column("pri", [style.priority(t["priority"]) for t in tasks]),
            Column("project", [Text(safe(t["project"])) for t in tasks], capped=True),
            Column("tags", [Text(safe(" ".join(t["tags"]))) for t in tasks], capped=True),
            Column("deps", [Text(safe(",".join(str(d) for d in t["depends"]))) for t in tasks]),
            Column("assignee", [style.claim(t, now, self.viewer) for t in tasks], capped=True),
        ]
        if len({t["domain"] for t in tasks}) > 1:
            cols.append(Column("domain", [Text(safe(t["domain"])) for t in tasks], capped=True))
        cols.append(Column("description", [_description(t) for t in tasks]))
        urg = [Text(f"{u:.1f}") for u in self.urgency] if len(self.urgency) == len(tasks) else blank
        cols.append(Column("urg", urg, right=True))
        return [c for c in cols if c.name == "description" or any(cell.plain for cell in c.cells)]

    def lines(self, console: Console, width: int, plain: bool = False) -> Iterator[Segment]:
        """Each row as one line of segments, laid out here: rich's Table would measure every cell again
        and costs about a second per thousand rows; `list` may show ten thousand."""
        cols, widths = _fit(self.columns(), width, self.wide)
        d = next(i for i, c in enumerate(cols) if c.name == "description")
        right = [c.right for c in cols]
        header = [Text(c.name, style="" if plain else "underline") for c in cols]
        yield from _line(console, header, widths, right, "")
        if plain:  # Taskwarrior's colourless header: a line of dashes under each column name
            yield from _line(console, [Text("-" * w) for w in widths], widths, right, "")
        blank = [Text("") for _ in cols]
        for n, task in enumerate(self.tasks):
            cells = [c.cells[n] for c in cols]
            row = style.row(task, n < len(self.blocked) and self.blocked[n], self.viewer)
            if not self.wide:
                cells[d] = _description(task, widths[d])
                yield from _line(console, cells, widths, right, row)
                continue
            for k, part in enumerate(cells[d].wrap(console, widths[d], overflow="fold")):
                line = cells if k == 0 else list(blank)
                line[d] = part
                yield from _line(console, line, widths, right, row)


def _line(
    console: Console, cells: list[Text], widths: list[int], right: list[bool], row: str
) -> Iterator[Segment]:
    """One line: cells padded (or cut, with an ellipsis) to their widths, one space apart, in `row`'s
    style; no trailing spaces."""
    line = Text(end="")
    last = len(cells) - 1
    for i, (cell, w) in enumerate(zip(cells, widths, strict=True)):
        if cell.cell_len > w:
            cell = cell.copy()
            cell.truncate(w, overflow="ellipsis")
        pad = " " * (w - cell.cell_len)
        if right[i]:
            line.append(pad)
            line.append_text(cell)
        else:
            line.append_text(cell)
            if i < last:
                line.append(pad)
        if i < last:
            line.append(" ")
    line.rstrip()
    if row:
        line.stylize_before(row)  # under the cells' own styles: a blocked H stays red, only dimmed
    yield from line.render(console)
    yield Segment.line()


def _age(entry: str, now: float) -> str:
    born = epoch(entry)  # not strptime: ten thousand rows would spend a third of a second in it
    return "" if born is None else span(now - born)


def _description(task: dict[str, Any], width: int | None = None) -> Text:
    """The description and its annotation count, `[2]`; cut to `width` cells with an ellipsis, the count
    kept (it says there is more to read in `task show`)."""
    count = len(task["annotations"])
    tail = Text(f" [{count}]", style="dim") if count else Text("")
    text = Text(safe(task["description"]))
    if width is not None and text.cell_len + tail.cell_len > width:
        if tail.cell_len + 2 > width:
            tail = Text("")
        text.truncate(max(1, width - tail.cell_len), overflow="ellipsis")
    return text + tail


def _natural(col: Column) -> int:
    return max([cell_len(col.name), *(c.cell_len for c in col.cells)])


def _fit(cols: list[Column], width: int, wide: bool) -> tuple[list[Column], list[int]]:
    """The columns that fit and their widths: every column its widest cell (capped ones at most CAP), the
    description what is left. When that is under MIN_DESCRIPTION, capped columns shrink (never below
    their name), then the columns that matter least go (DROPPABLE, in order)."""
    while True:
        widths, short = _widths(cols, width, wide)
        gone = next((n for n in DROPPABLE if short and any(c.name == n for c in cols)), None)
        if gone is None:
            return cols, widths
        cols = [c for c in cols if c.name != gone]


def _widths(cols: list[Column], width: int, wide: bool) -> tuple[list[int], bool]:
    natural = [_natural(c) for c in cols]
    widths = [min(n, CAP) if c.capped and not wide else n for c, n in zip(cols, natural, strict=True)]
    d = next(i for i, c in enumerate(cols) if c.name == "description")
    want = min(natural[d], MIN_DESCRIPTION)
    room = width - (len(cols) - 1) - (sum(widths) - widths[d])
    for i in _capped_widest_first(cols, widths):
        give = min(widths[i] - cell_len(cols[i].name), want - room)
        if give > 0:
            widths[i] -= give
            room += give
    widths[d] = max(1, min(natural[d], room))
    return widths, room < want


def _capped_widest_first(cols: list[Column], widths: list[int]) -> Iterator[int]:
    return iter(sorted((i for i, c in enumerate(cols) if c.capped), key=lambda i: -widths[i]))


def _count(n: int, one: str, many: str | None = None) -> str:
    return f"{n} {one if n == 1 else many or one}"


def counts(tasks: list[dict[str, Any]], blocked: list[bool]) -> str:
    """`16 tasks, 3 in progress, 1 in review, 2 blocked`: the states that are there, then blocked."""
    parts = [_count(len(tasks), "task", "tasks")]
    states = [t["state"] for t in tasks]
    for name, words in (
        ("in_progress", "in progress"),
        ("review", "in review"),
        ("done", "done"),
        ("deleted", "deleted"),
    ):
        n = states.count(name)
        if n:
            parts.append(_count(n, words))
    if any(blocked):
        parts.append(_count(sum(blocked), "blocked"))
    return ", ".join(parts)
