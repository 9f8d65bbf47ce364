"""This machine's name, as `socket.gethostname()` gives it, without importing `socket` (its enums cost
milliseconds per process; ADR 0010). On POSIX both read the kernel's node name."""

from __future__ import annotations

import os


def hostname() -> str:
    if hasattr(os, "uname"):
        return os.uname().nodename
    import socket

    return socket.gethostname()
