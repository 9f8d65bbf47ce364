"""`michi watch`: the status view kept live in the terminal (rich.live), with recent activity from git.

Ctrl-C is how a person leaves a watch, not an interruption of work: it exits 0 (ADR 0013). A refresh
that fails (the remote unreachable under --fetch) shows the error above the last good view and the
watch goes on; the next refresh may succeed.
"""

from __future__ import annotations

import gc
import time
from typing import Any

from michi.durations import as_given, duration
from michi.errors import ExitCode, MichiError, UsageError
from michi.session import Session


def recent_activity(session: Session, sync: dict[str, Any], count: int, now: float) -> Any:
    """The last `count` michi commits of the task branch: when, who, what (from the Michi-* trailers)."""
    from rich.table import Table
    from rich.text import Text

    from michi.git.trail import log_entries

    table = Table(title="recent activity", title_justify="left", show_edge=False)
    for name in ("when", "agent", "what"):
        table.add_column(name)
    ref = sync["remote_tip"] if sync["remote_tip"] and not sync["ahead"] else sync["local"]
    if not count or ref is None:
        return table
    newest_first = log_entries(
        session.repo.worktree,
        ref,
        task_files_only=False,
        max_count=count,
        oldest_first=False,
        michi_only=True,
    )
    for entry in newest_first:
        agent = entry.trailers.get("Michi-Agent", "-")
        what = entry.subject.removeprefix("michi: ")
        table.add_row(f"{duration(now - entry.time)} ago", Text(agent), Text(what))
    return table


def frame(session: Session, *, interval: float, fetch: bool, activity: int) -> Any:
    from rich.console import Group
    from rich.text import Text

    from michi.cli.status_views import status_view
    from michi.commands import status

    # A refresh after the branch moved reads through a new GitPython repository, whose `git cat-file`
    # helpers live until the garbage collector breaks its reference cycles: collect the previous
    # refresh's now, or a watch over a busy swarm gathers one idle git process per change.
    gc.collect()
    now = time.time()
    report = status.collect(session, fetch=fetch, now=now)
    recent = recent_activity(session, report.data["sync"], activity, now)
    clock = time.strftime("%H:%M:%S", time.localtime(now))
    head = Text(f"michi watch: every {as_given(interval)}s, updated {clock}; Ctrl-C leaves", style="bold")
    return Group(head, status_view(report.data, extra=recent))


def run(session: Session, *, interval: float, fetch: bool, activity: int) -> int:
    if session.json:
        raise UsageError(
            "watch is a view for people; it has no --json output",
            hint="agents poll 'michi status --json' instead",
        )
    from rich.console import Console
    from rich.live import Live

    console = Console(highlight=False)
    try:
        last = frame(session, interval=interval, fetch=fetch, activity=activity)
        if not console.is_terminal:  # piped or logged: one view after another, as `watch -t | tee` would
            return _print_loop(console, session, last, interval=interval, fetch=fetch, activity=activity)
        with Live(last, console=console, auto_refresh=False, redirect_stderr=False) as live:
            while True:
                time.sleep(interval)
                try:
                    last = view = frame(session, interval=interval, fetch=fetch, activity=activity)
                except MichiError as exc:
                    view = with_error(last, exc)
                live.update(view, refresh=True)
    except KeyboardInterrupt:  # the way out of a watch (ADR 0013)
        return ExitCode.OK


def with_error(last: Any, exc: MichiError) -> Any:
    from rich.console import Group
    from rich.text import Text

    return Group(Text(f"last refresh failed: {exc.one_line()}", style="red"), last)


def _print_loop(
    console: Any, session: Session, view: Any, *, interval: float, fetch: bool, activity: int
) -> int:
    while True:  # ends by Ctrl-C, which the caller turns into exit 0
        console.print(view)
        console.file.flush()
        time.sleep(interval)
        try:
            view = frame(session, interval=interval, fetch=fetch, activity=activity)
        except MichiError as exc:
            view = with_error(view, exc)
