"""Whether a process id names a running process (any process: signal 0 checks, sends nothing)."""

from __future__ import annotations

import os


def exists(pid: int) -> bool:
    """True when `pid` names a process, this user's or another's (`kill` then says "not permitted")."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
