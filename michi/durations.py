"""How long something took or has held, said one way everywhere: `42s`, `3m05s`, `2h07m`; and when
something happened, written one way in every JSON michi prints: Taskwarrior's `20250101T120000Z` (UTC)."""

from __future__ import annotations

import time

# The task files' format (ADR 0006), `YYYYMMDDTHHMMSSZ`: one format across michi's JSON.
INVALID_TIME = "invalid time"  # a moment no such date can hold (before year 1, after year 9999)


def stamp(epoch: float | None) -> str | None:
    """A moment as michi's JSON writes it (the lock's record keeps ISO with microseconds on disk). The
    year has four digits whatever the moment (strftime wrote year 1 as `10101T000000Z`, year 10000, which
    a record of 9999-12-31T23:59:59.999999 rounds to, as nine digits): one outside 1..9999, or one the
    clock cannot hold (a hand-edited lock record, a commit dated so), is `invalid time`, never a crash."""
    if epoch is None:
        return None
    try:
        year, month, day, hour, minute, second = time.gmtime(epoch)[:6]
    except (OverflowError, OSError, ValueError):
        return INVALID_TIME
    if not 1 <= year <= 9999:
        return INVALID_TIME
    return f"{year:04d}{month:02d}{day:02d}T{hour:02d}{minute:02d}{second:02d}Z"


def duration(seconds: float) -> str:
    whole = max(0, int(seconds))
    if whole < 60:
        return f"{whole}s"
    if whole < 3600:
        return f"{whole // 60}m{whole % 60:02d}s"
    return f"{whole // 3600}h{whole % 3600 // 60:02d}m"


def as_given(seconds: float) -> str:
    """A number of seconds echoed in a message (a flag's, a setting's) as a person writes it: `999999999999`
    and `2.5`, where `:g` said `1e+12` and `3.16224e+08`; an integral one as an integer while a float
    holds it exactly."""
    value = float(seconds)
    if value.is_integer() and abs(value) < 2**53:
        return str(int(value))
    return repr(value)  # the shortest that reads back the same: 0.1, 1e+300, inf, nan
