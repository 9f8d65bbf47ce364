"""Rich views of the task results for people (agents get the JSON of the same results)."""

from __future__ import annotations

import json
import time
from functools import cache
from typing import Any

from michi.cli import render


def done(result: Any, *, wide: bool = False, no_color: bool = False) -> Any:
    """Notes (how old the data is, unreadable files) go to stderr, so stdout stays one JSON document.
    `wide` and `no_color` are `list`'s and `show`'s `--wide` and `--no-color`, for the one render. The
    views are registered only when a person's output is rendered: they import result types --json never
    needs (ADR 0010)."""
    render.defer_views(register)
    if wide or no_color:  # else the default look stays: its module is not even imported (ADR 0010)
        from michi.cli.views import look

        look.set_look(look.Look(color=not no_color, wide=wide))
    for note in getattr(result, "notes", None) or []:
        render.note(note)
    return result


@cache
def register() -> None:
    """The views, registered on first use; rich is imported only when one of them is called, so the
    typer route (which registers them whatever the output) keeps `--json` free of rich."""
    from michi.commands.doctor import Report
    from michi.commands.interop import Export
    from michi.commands.task_common import Changed, TaskDetail, TaskList, TaskResult

    @render.human.register(TaskList)
    def _list(result: TaskList) -> Any:
        from michi.cli.views.task_table import TaskTable, counts

        if not result.tasks:
            return f"no {result.title}"
        from michi.cli.views import look

        r, wide = result, look.current().wide
        table = TaskTable(r.tasks, time.time(), r.urgency, r.blocked, r.viewer, wide)
        return _group(table, counts(result.tasks, result.blocked))

    @render.human.register(TaskResult)
    def _one(result: TaskResult) -> Any:
        from michi.cli.views.task_card import TaskCard

        return TaskCard(result.task, time.time(), result.txn)

    @render.human.register(TaskDetail)
    def _detail(result: TaskDetail) -> Any:
        from michi.cli.views.task_card import TaskCard

        t = result
        return TaskCard(t.task, time.time(), None, t.depends_on, t.blocks, t.urgency, t.blocked, t.viewer)

    @render.human.register(Changed)
    def _changed(result: Changed) -> Any:
        summary = ", ".join(f"{len(v)} {k}" for k, v in result.report.items() if isinstance(v, list))
        lines = [summary] if summary else []
        for p in result.report.get("problems", []):
            lines.append(f"problem: {p.get('path') or p.get('uuid')}: {p['problem']}")
        head = "\n".join(lines) or f"{len(result.tasks)} task(s) changed"
        from michi.cli.views.task_table import TaskTable

        if not result.tasks:
            return head
        from rich.text import Text  # not markup: problems name paths and uuids from the files

        return _group(Text(render.for_terminal(head)), TaskTable(result.tasks, time.time()))

    @render.human.register(Export)
    def _export(result: Export) -> Any:
        return json.dumps(result.records, indent=2, ensure_ascii=False)

    @render.human.register(Report)
    def _report(result: Report) -> Any:
        return result.summary()


def _group(*parts: Any) -> Any:
    from rich.console import Group

    return Group(*parts)
