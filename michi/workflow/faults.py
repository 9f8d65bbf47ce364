"""Named points where tests inject a crash: `MICHI_FAULT=pushed` SIGKILLs the process right there.

Crash recovery cannot be tested honestly without killing a real process at a known moment (ADR 0004);
this is the one place that reads the variable, and it costs one dict lookup when unset.
"""

from __future__ import annotations

import os
import signal

POINTS = (
    "locked",
    "fetched",
    "spawned",
    "committed",
    "pushing",
    "pushed",
    "local",
    "refused",
    "prefetched",
    "prebuilt",
)


def point(name: str) -> None:
    wanted = os.environ.get("MICHI_FAULT")
    if wanted and wanted == name:
        os.kill(os.getpid(), signal.SIGKILL)
