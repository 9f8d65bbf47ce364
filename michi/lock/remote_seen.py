"""How long this machine has seen the remote lock's record unchanged, by its own clock (ADR 0009).

A remote record expires when it has stayed the same commit for its whole TTL: the holder renews by
writing a new commit (a new object id), so "unchanged for TTL as I measured it" means "not renewed for
TTL". Only one clock is involved, the observer's, and only as a stopwatch, so the machines' wall clocks
need not agree. The stopwatch is CLOCK_BOOTTIME (it keeps counting through suspend; the holder's own
lease measure uses it too) and is shared by every process of this boot through a small file in the
state dir, so agents that each wait briefly still add up to one long observation.

Every first sighting is taken *after* the record was written, so any mix of sightings (lost updates
between processes, a file that cannot be written) errs on the side of waiting longer, never shorter.
"""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Any

from michi.atomic import read_regular, write_atomic
from michi.lock.record import boot_clock as clock  # shared by all processes of this boot
from michi.lock.record import boot_id

SEEN_FILE = "remote-lock-seen.json"


class Sightings:
    """First sightings of record commits, per remote, remembered in memory and in `state_dir`."""

    def __init__(self, state_dir: Path, key: str) -> None:
        self.path = state_dir / SEEN_FILE
        self.key = key
        self.memory: dict[str, float] = {}

    def _read(self) -> dict[str, Any]:
        try:
            data = json.loads(read_regular(self.path))
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def unchanged_for(self, oid: str) -> float:
        """Seconds since this machine first saw the lock ref name `oid` (0.0 on the first sighting)."""
        now = clock()
        since = self.memory.setdefault(oid, now)
        data = self._read()
        entry = data.get(self.key)
        if (
            isinstance(entry, dict)
            and entry.get("oid") == oid
            and entry.get("boot") == boot_id()
            and type(entry.get("since")) in (int, float)  # not a bool
            and 0 <= entry["since"] <= now  # a stopwatch reading of this boot, never before it nor ahead
        ):
            since = min(since, float(entry["since"]))
            self.memory[oid] = since
        else:
            data[self.key] = {"oid": oid, "boot": boot_id(), "since": since}
            with contextlib.suppress(
                OSError
            ):  # read-only state dir: this process's own stopwatch still counts
                self.path.parent.mkdir(parents=True, exist_ok=True)
                write_atomic(self.path, json.dumps(data, indent=1).encode())
        return max(0.0, now - since)
