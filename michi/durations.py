"""How long something took or has held, said one way everywhere: `42s`, `3m05s`, `2h07m`; and when
something happened, written one way in every JSON michi prints: Taskwarrior's `20250101T120000Z` (UTC)."""

from __future__ import annotations

import time

JSON_TIME = "%Y%m%dT%H%M%SZ"  # the task files' format (ADR 0006): one format across michi's JSON


def stamp(epoch: float | None) -> str | None:
    """A moment as michi's JSON writes it (the lock's record keeps ISO with microseconds on disk)."""
    return None if epoch is None else time.strftime(JSON_TIME, time.gmtime(epoch))


def duration(seconds: float) -> str:
    whole = max(0, int(seconds))
    if whole < 60:
        return f"{whole}s"
    if whole < 3600:
        return f"{whole // 60}m{whole % 60:02d}s"
    return f"{whole // 3600}h{whole % 3600 // 60:02d}m"
