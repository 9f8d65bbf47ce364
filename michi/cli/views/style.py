"""What each colour means, in one place (ADR 0014): priority H red, M yellow, L blue; in_progress green,
review magenta; the viewing agent's own claims bold; a claim with under ten minutes left yellow, an expired
one red; blocked tasks dimmed. Plain output loses none of it: the same words are in the cells."""

from __future__ import annotations

from typing import Any

from rich.text import Text

from michi import shown
from michi.tasks.model import parse_tw_date

PRIORITY = {"H": "bold red", "M": "yellow", "L": "blue"}
STATE = {"in_progress": "bold green", "review": "magenta", "done": "dim", "deleted": "dim strike"}
SOON = 600.0  # seconds: a claim this close to its expiry is about to be lost


def safe(text: str | None) -> str:
    """Task text is written by anyone (agents included): `text` with line breaks and tabs as spaces (they
    would break rows) and other control characters as U+FFFD (`michi.shown`)."""
    return (text or "").translate(shown.ONE_LINE)


def priority(value: str | None) -> Text:
    return Text(value or "", style=PRIORITY.get(value or "", ""))


def state(value: str) -> Text:
    return Text(value, style=STATE.get(value, ""))


def claim_left(task: dict[str, Any], now: float) -> float | None:
    """Seconds the task's claim has left (negative: expired); None without a claim that expires."""
    if task["state"] != "in_progress" or not task["assignee"] or not task["claim_expires"]:
        return None
    try:
        return parse_tw_date(task["claim_expires"]) - now
    except ValueError:
        return None


def claim(task: dict[str, Any], now: float, viewer: str | None) -> Text:
    """The assignee, with the claim's time left when it runs out: `bot-1 (52min)`, `bot-1 (expired)`."""
    from michi.cli.views.look import span

    who = safe(task["assignee"])
    left = claim_left(task, now)
    if left is None:
        return Text(who, style="bold" if who and who == viewer else "")
    if left <= 0:
        return Text(f"{who} (expired)", style="red")
    own = "bold " if who == viewer else ""
    return Text(f"{who} ({span(left)})", style=own + ("yellow" if left <= SOON else ""))


def row(task: dict[str, Any], blocked: bool, viewer: str | None) -> str:
    if blocked:
        return "dim"
    return "bold" if viewer and task["assignee"] == viewer and task["state"] == "in_progress" else ""
