"""Named points where tests inject a crash: `MICHI_FAULT=pushed` SIGKILLs the process right there, and
`MICHI_FAULT=done:SIGINT` sends it that signal there instead (a Ctrl-C at a known moment).

Crash recovery cannot be tested honestly without killing a real process at a known moment (ADR 0004);
this is the one place that reads the variable, and it costs one dict lookup when unset.
"""

from __future__ import annotations

import os
import signal
import threading

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
    "done",
    "withdrawing",
    "renewing",
    "claiming",  # a served command's worker, before it claims its caller's command (ADR 0016)
    "claimed",  # ... and just after
)


def point(name: str) -> None:
    wanted = os.environ.get("MICHI_FAULT")
    if not wanted:
        return
    where, _, sent = wanted.partition(":")
    if where == name:
        # To this very thread: a stop (SIGSTOP) sent to the process may let a worker thread (an MCP
        # call's) run on past the point before the process stops.
        signal.pthread_kill(threading.get_ident(), getattr(signal, sent) if sent else signal.SIGKILL)
