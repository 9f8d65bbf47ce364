"""One task for people (`task show`, and what a changing command prints): its fields in groups (what; state
and claim; dates; dependencies both ways; annotations; history), every date exact and relative."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from rich.console import Console, ConsoleOptions, Group, RenderResult
from rich.table import Table
from rich.text import Text

from michi.cli.views import style
from michi.cli.views.look import relative
from michi.cli.views.style import safe
from michi.tasks.model import parse_tw_date, status_for


def when(value: str | None, now: float) -> Text | None:
    """`2026-11-20 10:00:00 UTC (2 d ago)`; a value that is not a date is shown as it is."""
    if not value:
        return None
    try:
        epoch = parse_tw_date(value)
    except ValueError:
        return Text(safe(value))
    exact = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(epoch))
    return Text(exact) + Text(f" ({relative(now - epoch)})", style="dim")


@dataclass(frozen=True)
class TaskCard:
    task: dict[str, Any]
    now: float
    txn: dict[str, Any] | None = None
    depends_on: list[dict[str, Any]] | None = None  # None: only the ids in `task` are known
    blocks: list[dict[str, Any]] = field(default_factory=list)
    urgency: float | None = None
    blocked: bool = False
    viewer: str | None = None

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield Group(*self.parts())

    def parts(self) -> list[Any]:
        t, now = self.task, self.now
        title = Table.grid(padding=(0, 2))  # a long description wraps under itself, not under the id
        title.add_column(no_wrap=True)
        title.add_column()
        title.add_row(Text(f"task {t['id']}", style="bold"), Text(safe(t["description"]), style="bold"))
        out: list[Any] = [title]
        what = [("priority", style.priority(t["priority"])), ("project", safe(t["project"]))]
        what += [
            ("tags", safe(" ".join(t["tags"]))),
            ("domain", safe(t["domain"])),
            ("uuid", safe(t["uuid"])),
        ]
        out += _group(None, what)
        state = style.state(t["state"])
        if t["status"] != status_for(t["state"]):  # e.g. waiting: Taskwarrior hides it until its date
            state += Text(f" (Taskwarrior status {t['status']})", style="dim")
        if self.blocked:
            state += Text(", blocked", style="dim")
        rows: list[tuple[str, Any]] = [("state", state)]
        if self.urgency is not None:
            rows.append(("urgency", f"{self.urgency:.2f}"))
        if t["assignee"]:
            rows.append(("assignee", style.claim(t, now, self.viewer)))
            if t["claim_expires"]:
                rows.append(("claim expires", when(t["claim_expires"], now)))
        out += _group("state and claim", rows)
        dates = [(k, when(t[k], now)) for k in ("entry", "modified", "start", "end")]
        out += _group("dates", dates)
        out += _group("dependencies", self._links())
        notes = [(when(a["entry"], now), safe(a["description"])) for a in t["annotations"]]
        out += _group("annotations", notes, 0)
        out += _group("history", [("version", _history(t, now))])
        if self.txn is not None:
            where = "pushed" if self.txn["pushed"] else "committed locally (not pushed)"
            rows = [("commit", f"{(self.txn['commit'] or 'none')[:10]} {where} on {self.txn['branch']}")]
            out += _group("transaction", rows + [("note", n) for n in self.txn["notes"]])
        return out

    def _links(self) -> list[tuple[str, Any]]:
        if self.depends_on is None:
            return [("depends on", safe(", ".join(str(d) for d in self.task["depends"])))]
        rows: list[tuple[str, Any]] = []
        for label, tasks in (("depends on", self.depends_on), ("blocks", self.blocks)):
            for n, other in enumerate(tasks):
                line = Text(safe(str(other["id"])), style="bold") + Text(
                    f"  {safe(other['description']) or '(no such task)'}"
                )
                if other["state"]:
                    line += Text("  (") + style.state(other["state"]) + Text(")")
                rows.append((label if n == 0 else "", line))
        return rows


def _history(task: dict[str, Any], now: float) -> str:
    changes = int(task["version"]) - 1
    try:
        made = relative(now - parse_tw_date(task["entry"]))
        last = relative(now - parse_tw_date(task["modified"]))
    except ValueError:
        return str(task["version"])
    if changes == 0:
        return f"{task['version']}: created {made}, never changed"
    times = "once" if changes == 1 else f"{changes} times"
    return f"{task['version']}: created {made}, changed {times}, last {last}"


KEY_WIDTH = len("claim expires")  # the widest label: every group's values start in one column


def _group(heading: str | None, rows: list[tuple[Any, Any]], key_width: int = KEY_WIDTH) -> list[Any]:
    """A heading and a two-column grid of the rows that have a value; nothing when none has."""
    shown = [(k, v) for k, v in rows if v is not None and (v.plain if isinstance(v, Text) else str(v))]
    if not shown:
        return []
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="dim" if key_width else "", no_wrap=True, min_width=key_width)
    grid.add_column()
    for key, value in shown:  # a plain string would be read as rich markup: `[/]` in a tag crashed the view
        grid.add_row(*(v if isinstance(v, Text) else Text(str(v)) for v in (key, value)))
    if heading is None:
        return [_indent(grid)]
    return [Text(""), Text(heading, style="bold underline"), _indent(grid)]


def _indent(renderable: Any) -> Any:
    from rich.padding import Padding

    return Padding(renderable, (0, 0, 0, 2), expand=False)
