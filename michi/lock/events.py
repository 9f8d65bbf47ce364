"""The lock's local event log (`<state dir>/lock-events.jsonl`) and the numbers `michi lock stats` shows.

One JSON line per event, appended with a single O_APPEND write (whole lines even with many writers).
Kinds: `hold` (acquired and released by one process: wait, hold, contended, takeover), `acquire` and
`release` (the two halves when a script spans commands), `timeout`, `release_left` (a release that found
the guard held past its wait, by a stopped process, and left the lock in place), `release_late` (that
lock removed once the guard was free, by the holder's process still running). Rotated to `.1` past
MAX_BYTES.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import stat
import time
from pathlib import Path
from typing import Any

from michi.atomic import read_regular

LOG_NAME = "lock-events.jsonl"
MAX_BYTES = 2_000_000


def log_path(state_dir: Path) -> Path:
    return state_dir / LOG_NAME


def append(state_dir: Path, kind: str, **fields: Any) -> None:
    """Best effort: metrics never make a lock operation fail."""
    path = log_path(state_dir)
    line = json.dumps({"t": round(time.time(), 6), "kind": kind, **fields}, separators=(",", ":")) + "\n"
    with contextlib.suppress(OSError):
        # Never blocking nor following a link: a FIFO put there once hung every locking command.
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC | os.O_NONBLOCK | os.O_NOFOLLOW
        fd = os.open(path, flags, 0o644)
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                return
            os.write(fd, line.encode())
            if os.fstat(fd).st_size > MAX_BYTES:
                os.replace(path, path.with_name(LOG_NAME + ".1"))
        finally:
            os.close(fd)


def read(state_dir: Path) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    for path in (log_path(state_dir).with_name(LOG_NAME + ".1"), log_path(state_dir)):
        try:
            lines = read_regular(path).decode("utf-8").splitlines()
        except (OSError, UnicodeDecodeError):
            continue
        for line in lines:
            with contextlib.suppress(ValueError):
                event = json.loads(line)
                if isinstance(event, dict):
                    events.append(event)
    return events


def _spread(samples: list[float]) -> dict[str, float | None]:
    import statistics  # only `michi lock stats` needs it; every acquisition imports this module

    if not samples:
        return {"median": None, "p95": None, "max": None}
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return {
        "median": round(statistics.median(ordered), 6),
        "p95": round(p95, 6),
        "max": round(ordered[-1], 6),
    }


def _finite(value: Any) -> bool:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    try:
        return math.isfinite(value)
    except OverflowError:  # an integer of 400 digits: no float holds it
        return False


def _sound(event: dict[str, Any]) -> bool:
    """A line whose time, wait or hold is no finite number (a disk error, an editor, another version:
    "t": "x", "hold": null, 1e999, NaN) is left out: it made `lock stats` exit 1, or print bare NaN or
    Infinity, which no JSON reader takes."""
    return all(_finite(event[key]) for key in ("t", "wait", "hold") if key in event)


def summarize(events: list[dict[str, Any]]) -> dict[str, Any]:
    events = [e for e in events if _sound(e)]
    acquired = [e for e in events if e.get("kind") in ("hold", "acquire")]
    holds = [float(e["hold"]) for e in events if e.get("kind") in ("hold", "release") and "hold" in e]
    takeovers: dict[str, int] = {}
    for event in acquired:
        if event.get("takeover"):
            takeovers[str(event["takeover"])] = takeovers.get(str(event["takeover"]), 0) + 1
    return {
        "acquisitions": len(acquired),
        "contended": sum(1 for e in acquired if e.get("contended")),
        "timeouts": sum(1 for e in events if e.get("kind") == "timeout"),
        "takeovers": sum(takeovers.values()),
        "takeover_reasons": takeovers,
        "wait": _spread([float(e.get("wait", 0.0)) for e in acquired]),
        "hold": _spread(holds),
        "since": min((float(e["t"]) for e in events if "t" in e), default=None),
    }
