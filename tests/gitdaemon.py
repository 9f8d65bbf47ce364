"""A real network remote for tests: `git daemon` serving bare repositories on 127.0.0.1, pushes allowed."""

from __future__ import annotations

import contextlib
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def git_daemon(root: Path, probe: str = "origin.git") -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """Serve `root`'s bare repositories at git://127.0.0.1:PORT/; yields the base URL once `probe` (a
    repository under `root`) answers, and the daemon (tests stop it to take the remote down)."""
    port = free_port()
    daemon = subprocess.Popen(
        [
            "git",
            "daemon",
            "--reuseaddr",
            "--export-all",
            "--enable=receive-pack",
            "--listen=127.0.0.1",
            f"--port={port}",
            f"--base-path={root}",
            str(root),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        url = f"git://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        while subprocess.run(["git", "ls-remote", f"{url}/{probe}"], capture_output=True).returncode:
            assert time.monotonic() < deadline and daemon.poll() is None, "git daemon did not come up"
            time.sleep(0.05)  # polling the port: git daemon has no readiness signal
        yield url, daemon
    finally:
        if daemon.poll() is None:
            daemon.terminate()
            daemon.wait(timeout=10)
