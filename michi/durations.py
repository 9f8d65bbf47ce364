"""How long something took or has held, said one way everywhere: `42s`, `3m05s`, `2h07m`."""

from __future__ import annotations


def duration(seconds: float) -> str:
    whole = max(0, int(seconds))
    if whole < 60:
        return f"{whole}s"
    if whole < 3600:
        return f"{whole // 60}m{whole % 60:02d}s"
    return f"{whole // 3600}h{whole % 3600 // 60:02d}m"
