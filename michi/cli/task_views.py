"""Rich views of the task results for people (agents get the JSON of the same results)."""

from __future__ import annotations

import json
import sys
from functools import cache
from typing import Any

from michi.cli import render


def _table(tasks: list[dict[str, Any]], title: str) -> Any:
    from rich.table import Table

    table = Table(title=title, title_justify="left", show_edge=False, pad_edge=False)
    for name, justify in (
        ("id", "right"),
        ("state", "left"),
        ("pri", "left"),
        ("description", "left"),
        ("tags", "left"),
        ("project", "left"),
        ("assignee", "left"),
        ("domain", "left"),
    ):
        table.add_column(name, justify=justify)  # type: ignore[arg-type]
    for t in tasks:
        table.add_row(
            str(t["id"]),
            t["state"],
            t["priority"] or "",
            t["description"],
            " ".join(t["tags"]),
            t["project"] or "",
            t["assignee"] or "",
            t["domain"],
        )
    return table


def _panel(task: dict[str, Any], txn: dict[str, Any] | None) -> Any:
    from rich.panel import Panel
    from rich.table import Table

    grid = Table.grid(padding=(0, 2))
    for key, value in task.items():
        if key == "annotations":
            value = "\n".join(f"{a['entry']} {a['description']}" for a in value) or None
        elif isinstance(value, list):
            value = ", ".join(str(v) for v in value) or None
        if value is not None:
            grid.add_row(key, str(value))
    if txn is not None:
        where = "pushed" if txn["pushed"] else "committed locally (not pushed)"
        grid.add_row("commit", f"{(txn['commit'] or 'none')[:10]} {where} on {txn['branch']}")
        for note in txn["notes"]:
            grid.add_row("note", note)
    return Panel(grid, title=f"task {task['id']}", title_align="left", expand=False)


def done(result: Any) -> Any:
    """Notes (how old the data is, unreadable files) go to stderr, so stdout stays one JSON document.
    The rich views are registered when a person's output is rendered."""
    render.defer_views(register)
    for note in getattr(result, "notes", None) or []:
        sys.stderr.write(f"michi: {note}\n")
    return result


@cache
def register() -> None:
    from michi.commands.doctor import Report
    from michi.commands.interop import Export
    from michi.commands.task_common import Changed, TaskList, TaskResult

    @render.human.register(TaskList)
    def _list(result: TaskList) -> Any:
        return (
            _table(result.tasks, f"{len(result.tasks)} {result.title}")
            if result.tasks
            else f"no {result.title}"
        )

    @render.human.register(TaskResult)
    def _one(result: TaskResult) -> Any:
        return _panel(result.task, result.txn)

    @render.human.register(Changed)
    def _changed(result: Changed) -> Any:
        counts = ", ".join(f"{len(v)} {k}" for k, v in result.report.items() if isinstance(v, list))
        lines = [counts] if counts else []
        for p in result.report.get("problems", []):
            lines.append(f"problem: {p.get('path') or p.get('uuid')}: {p['problem']}")
        head = "\n".join(lines) or f"{len(result.tasks)} task(s) changed"
        return head if not result.tasks else _group(head, _table(result.tasks, "changed"))

    @render.human.register(Export)
    def _export(result: Export) -> Any:
        return json.dumps(result.records, indent=2, ensure_ascii=False)

    @render.human.register(Report)
    def _report(result: Report) -> Any:
        return result.summary()


def _group(*parts: Any) -> Any:
    from rich.console import Group

    return Group(*parts)
