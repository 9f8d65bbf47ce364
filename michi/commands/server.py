"""`michi server start|stop|status`: the pre-loaded server that serves the `task` verbs (ADR 0016)."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from michi.errors import ServerFailed
from michi.results import Result
from michi.serve.address import Address

START_WAIT = 30.0  # loading michi takes well under a second; a loaded machine may take more
STOP_WAIT = 10.0


@dataclass(frozen=True)
class ServerStatus(Result):
    text: str
    running: bool
    pid: int | None = None
    socket: str = ""
    served: int = 0
    idle_timeout: float | None = None
    started: float | None = None
    workers: list[dict[str, int]] = field(default_factory=list)

    def summary(self) -> str:
        return self.text


def _running(where: Address) -> bool:
    """The server holds its lock file for its whole life (the kernel drops it when it dies)."""
    from michi.lock.wake import is_flocked

    return is_flocked(Path(where.lock))


def _info(where: Address) -> dict[str, Any]:
    try:
        with open(where.info, encoding="utf-8") as fh:
            data = json.load(fh)
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def status(where: Address | None = None) -> ServerStatus:
    where = where or Address()
    if not _running(where) or not os.path.exists(where.socket):
        return ServerStatus("no michi server is running (start one: michi server start)", running=False)
    info = _info(where)
    served = int(info.get("served", 0))
    workers = list(info.get("workers", []))
    return ServerStatus(
        f"michi server PID {info.get('pid')} serves michi on {where.socket}: "
        f"{served} served, {len(workers)} running now",
        running=True,
        pid=info.get("pid"),
        socket=where.socket,
        served=served,
        idle_timeout=info.get("idle_timeout"),
        started=info.get("started"),
        workers=workers,
    )


def start(idle: float | None) -> ServerStatus:
    where = Address()
    found = status(where)
    if found.running:
        return _with_text(found, "already running")
    args = [sys.executable, "-m", "michi.serve.server"]
    if idle is not None:
        args += ["--idle", str(idle)]
    proc = subprocess.Popen(
        args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        start_new_session=True,
    )  # fmt: skip
    deadline = time.monotonic() + START_WAIT
    while time.monotonic() < deadline:
        now = status(where)
        if now.running:
            return _with_text(now, "started")
        if proc.poll() is not None:
            if (found := status(where)).running:  # another `start` won the race: that one serves
                return _with_text(found, "already running")
            detail = proc.stderr.read().decode(errors="replace").strip() if proc.stderr else ""
            raise ServerFailed(
                f"the michi server did not start: {detail or f'exit {proc.returncode}'}",
                hint=f"run it in the foreground to see why: {sys.executable} -m michi.serve.server "
                "--foreground",
            )
        time.sleep(0.02)
    raise ServerFailed(
        f"the michi server did not start within {START_WAIT:.0f}s",
        hint=f"see its log: {where.log}",
    )


def stop() -> ServerStatus:
    where = Address()
    now = status(where)
    if not now.running or not now.pid:
        return _with_text(now, "nothing to stop")
    with contextlib.suppress(ProcessLookupError):
        os.kill(int(now.pid), signal.SIGTERM)
    deadline = time.monotonic() + STOP_WAIT
    while _running(where) and time.monotonic() < deadline:
        time.sleep(0.02)
    if _running(where):
        raise ServerFailed(
            f"the michi server PID {now.pid} did not stop within {STOP_WAIT:.0f}s",
            hint=f"commands it serves finish first; or end it: kill {now.pid}",
        )
    return ServerStatus(f"stopped the michi server PID {now.pid}", running=False, pid=now.pid)


def _with_text(found: ServerStatus, what: str) -> ServerStatus:
    from dataclasses import replace

    return replace(found, text=f"{what}: {found.text}")
