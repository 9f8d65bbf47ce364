"""Rich views of status, check and stats for people (agents get the JSON of the same results)."""

from __future__ import annotations

from functools import cache
from typing import Any

from michi.cli import render
from michi.durations import duration

BAR_WIDTH = 30
MAX_DAYS = 30  # days drawn for people; --json has them all


def done(result: Any) -> Any:
    """Notes (how old the data is) go to stderr, so stdout stays one JSON document."""
    for note in getattr(result, "notes", None) or []:
        render.note(note)
    return result


def _left(seconds: float | None) -> str:
    if seconds is None:
        return "no expiry"
    return f"{duration(seconds)} left" if seconds > 0 else f"EXPIRED {duration(-seconds)} ago"


def lock_line(lock: dict[str, Any]) -> str:
    if not lock["held"]:
        return "free" + (f", {len(lock['waiters'])} waiting" if lock["waiters"] else "")
    holder = lock["holder"]
    if holder is None:
        text = "held (no readable owner record)"
    else:
        who = f"PID {holder['pid']} on {holder['host']}" + (
            f", agent {holder['agent']}" if holder["agent"] else ""
        )
        text = f"held by {who}: {holder['command']!r} for {duration(holder['age'])}"
        left = lock["time_left"]
        text += ", no lease expiry" if left is None else f", lease {_left(left)}"
    if lock.get("fence") is not None:
        text += f", fence {lock['fence']}"
    if lock["waiters"]:
        text += f", {len(lock['waiters'])} waiting"
    if lock["stale"]:
        text += f" [STALE: {lock['reason']}; michi lock release --force clears it]"
    return text


def remote_lock_line(lock: dict[str, Any]) -> str:
    if "error" in lock:
        return f"could not ask the remote: {lock['error']['message']}"
    if not lock["held"]:
        return f"free on {lock['remote']}" + (f" (last fence {lock['fence']})" if lock["fence"] else "")
    holder = lock["holder"]
    who = f"PID {holder['pid']} on {holder['host']}" + (
        f", agent {holder['agent']}" if holder["agent"] else ""
    )
    text = f"{who} running {holder['command']!r} for {duration(holder['age'])}, fence {lock['fence']}"
    if lock["stale"]:
        return text + " [EXPIRED: the next taker takes it over]"
    return text + f", lease {duration(lock['time_left'] or 0)} left"


def _sync_line(sync: dict[str, Any]) -> str:
    if sync["remote"] is None:
        return f"branch {sync['branch']}, no remote (local only)"
    text = f"branch {sync['branch']} on {sync['remote']}, "
    text += "never synced" if sync["since_sync"] is None else f"last sync {duration(sync['since_sync'])} ago"
    if sync["ahead"] is not None:
        text += f", local {sync['ahead']} ahead / {sync['behind']} behind the remote"
    return text


def status_view(data: dict[str, Any], extra: Any = None) -> Any:
    """Descriptions and commands are the users' text: shown as `Text`, never read as rich markup."""
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    from michi.cli.views.style import safe

    grid = _Grid(Table.grid(padding=(0, 2)), lambda value: Text(safe(value)))
    grid.add_row("lock", lock_line(data["lock"]))
    if data.get("remote_lock") is not None:
        grid.add_row("remote lock", remote_lock_line(data["remote_lock"]))
    t = data["tasks"]
    counts = ", ".join(
        f"{t[s]} {s.replace('_', ' ')}" for s in ("todo", "in_progress", "review", "done", "deleted")
    )
    if t["unreadable"]:
        counts += f" ({t['unreadable']} unreadable: michi doctor)"
    grid.add_row("tasks", counts)
    oldest = data["oldest_in_progress"]
    if oldest is not None:
        by = f" by {oldest['assignee']}" if oldest["assignee"] else ""
        grid.add_row(
            "oldest",
            f"task {oldest['id']}{by}, in progress for {duration(oldest['age'])}: {oldest['description']}",
        )
    grid.add_row("sync", _sync_line(data["sync"]))
    pending = data["pending"]
    if pending["count"]:
        age = "" if pending["oldest_age"] is None else f", oldest {duration(pending['oldest_age'])}"
        grid.add_row("pending", f"{pending['count']} operation(s) not pushed{age} (michi sync pushes them)")
    if pending["dropped"]:  # not for `sync` to push: the user leaves them out (ADR 0004)
        from michi.commands.status_check import dropped_text

        grid.add_row("dropped", dropped_text(pending["dropped"], data["sync"]))
    parts: list[Any] = [grid.table]
    if data["claims"]:
        claims = Table(title=f"{len(data['claims'])} claim(s)", title_justify="left", show_edge=False)
        for name in ("id", "agent", "since", "lease", "description"):
            claims.add_column(name, justify="right" if name == "id" else "left")
        for c in data["claims"]:
            since = "" if c["age"] is None else f"{duration(c['age'])} ago"
            lease = _left(c["lease_left"])
            claims.add_row(
                str(c["id"]),
                Text(safe(c["agent"])),
                since,
                Text(lease, style="red" if c["expired"] else ""),
                Text(safe(c["description"])),
            )
        parts.append(claims)
    if extra is not None:
        parts.append(extra)
    return Group(*parts)


class _Grid:
    def __init__(self, table: Any, text: Any) -> None:
        self.table, self.text = table, text

    def add_row(self, name: str, value: str) -> None:
        self.table.add_row(name, self.text(value))


def bar(value: int, top: int) -> str:
    if value <= 0 or top <= 0:
        return ""
    return "█" * max(1, round(value / top * BAR_WIDTH))


def chart(days: list[dict[str, Any]]) -> str:
    shown = days[-MAX_DAYS:]
    top = max((max(d["opened"], d["closed"]) for d in shown), default=0)
    lines = [f"per day (UTC{'' if len(shown) == len(days) else f', last {MAX_DAYS} days'}):"]
    for d in shown:
        lines.append(
            f"  {d['date']}  opened {d['opened']:>4} {bar(d['opened'], top):<{BAR_WIDTH}}  "
            f"closed {d['closed']:>4} {bar(d['closed'], top)}".rstrip()
        )
    return "\n".join(lines)


def stats_view(data: dict[str, Any]) -> Any:
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    from michi.cli.views.style import safe

    parts: list[Any] = []
    if data["agents"]:
        table = Table(title="per agent", title_justify="left", show_edge=False)
        for name in ("agent", "claims", "done", "expired", "released", "claim→done median", "p90"):
            table.add_column(name, justify="left" if name == "agent" else "right")
        for agent, f in data["agents"].items():
            cycle = f["claim_to_done"]
            med, p90 = cycle["median"], cycle["p90"]
            table.add_row(
                Text(safe(agent)),
                str(f["claims"]),
                str(f["completions"]),
                str(f["expired"]),
                str(f["released"]),
                "-" if med is None else duration(med),
                "-" if p90 is None else duration(p90),
            )
        parts.append(table)
    else:
        parts.append("no claims or completions in the history" + (" since then" if data["since"] else ""))
    totals = data["totals"]
    parts.append(f"tasks opened {totals['opened']}, closed {totals['closed']}")
    if data["days"]:
        parts.append(Text(chart(data["days"])))
    lock = data["lock"]
    wait, hold = lock["wait"], lock["hold"]
    parts.append(
        f"lock (this clone): {lock['acquisitions']} acquisitions, {lock['contended']} contended, "
        f"{lock['timeouts']} timed out, {lock['takeovers']} takeovers; wait median {ms(wait['median'])} "
        f"p95 {ms(wait['p95'])}; hold median {ms(hold['median'])} p95 {ms(hold['p95'])}"
    )
    return Group(*parts)


def ms(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds * 1000:.1f} ms"


def check_view(problems: list[dict[str, Any]], reaped: list[dict[str, Any]] | None) -> str:
    lines = []
    if reaped:
        lines.append(
            f"reaped {len(reaped)} expired claim(s): " + ", ".join(f"task {t['id']}" for t in reaped)
        )
    lines += [f"{p['code']}: {p['message']}" for p in problems]
    if not problems:
        lines.append("healthy: no problems")
    return "\n".join(lines)


@cache
def register(json_mode: bool) -> None:
    if json_mode:  # --json renders no views
        return
    from michi.commands.stats import StatsReport
    from michi.commands.status import StatusReport
    from michi.commands.status_check import CheckReport

    render.human.register(StatusReport)(lambda r: status_view(r.data))
    render.human.register(StatsReport)(lambda r: stats_view(r.data))
    render.human.register(CheckReport)(lambda r: check_view(r.problems, r.reaped))
