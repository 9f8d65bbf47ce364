"""How output looks to a person: colour or plain, how wide, and times said the way people say them.

Colour only for a terminal, never with `NO_COLOR` (no-color.org: set and not empty) or `--no-color`;
`FORCE_COLOR` asks for it through a pipe (`| less -R`). Plain means no escape codes at all, not even bold
(rich's own NO_COLOR support keeps bold and dim). Width: the terminal's; through a pipe, `COLUMNS` if set,
else unlimited, so `michi task list | grep` sees every description whole. Rich is imported only here and
in the views, and only when a person is shown something (ADR 0002).
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from typing import Any

UNLIMITED = 10_000  # a console this wide never cuts a line


@dataclass(frozen=True)
class Look:
    color: bool = True  # False: --no-color
    wide: bool = False  # --wide: descriptions whole, wrapped in their column


_look = Look()


def set_look(look: Look) -> None:
    """The options of the command being run (`--no-color`, `--wide`); `take` resets them once used."""
    global _look
    _look = look


def current() -> Look:
    return _look


def take() -> Look:
    """The look for this output, then back to the default: in-process runs (tests) share the module."""
    global _look
    look, _look = _look, Look()
    return look


def colour_wanted(look: Look) -> bool:
    if not look.color or os.environ.get("NO_COLOR") or os.environ.get("TERM") == "dumb":
        return False
    return bool(os.environ.get("FORCE_COLOR")) or sys.stdout.isatty()


def width() -> int:
    if sys.stdout.isatty():
        import shutil

        return shutil.get_terminal_size().columns  # COLUMNS first, then the terminal
    columns = os.environ.get("COLUMNS", "")
    return int(columns) if columns.isdigit() and int(columns) > 0 else UNLIMITED


def console(look: Look) -> Any:
    from rich.console import Console

    class Quiet(Console):
        def on_broken_pipe(self) -> None:
            """rich exits 1 when the reader went away; michi's renderer says so and keeps the command's
            exit code (a change that landed is not a failure)."""
            self.quiet = True
            raise BrokenPipeError(32, "Broken pipe")

    colour = colour_wanted(look)
    return Quiet(
        highlight=False,
        width=width(),
        color_system="auto" if colour else None,
        force_terminal=colour or None,
        no_color=not colour,
    )


_UNITS = ((365 * 86400, "y"), (30 * 86400, "mo"), (7 * 86400, "wk"), (86400, "d"), (3600, "h"), (60, "min"))


def span(seconds: float) -> str:
    """A span in its largest whole unit: `45s`, `12min`, `3h`, `2d`, `5wk`, `8mo`, `2y`."""
    whole = int(abs(seconds))
    for size, unit in _UNITS:
        if whole >= size:
            return f"{whole // size}{unit}"
    return f"{whole}s"


def relative(seconds_ago: float) -> str:
    """`3 h ago`, `in 12 min`, `just now`."""
    if abs(seconds_ago) < 10:
        return "just now"
    text = span(seconds_ago)
    number = text.rstrip("abcdefghijklmnopqrstuvwxyz")
    text = f"{number} {text[len(number) :]}"
    return f"{text} ago" if seconds_ago > 0 else f"in {text}"
