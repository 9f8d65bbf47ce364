"""A real `michi server` for a test (ADR 0016), in a folder of the test's own (a short path: socket paths
are limited)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import CliResult, run_michi
from tests.lockkit import await_exit


def here(repo: Path, *args: str) -> CliResult:
    """michi run in its own process, never handed to a server."""
    return run_michi(repo, *args, env={"MICHI_SERVER": "off"})


def running_server(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict]:
    """Start one (its `server start --json` answer, plus `folder`); at the end continue it, should a test
    have stopped it, stop it and wait for its end."""
    folder = tempfile.mkdtemp(prefix="ms-")
    monkeypatch.setenv("MICHI_SERVER_DIR", folder)
    monkeypatch.delenv("MICHI_SERVER", raising=False)
    started = here(Path.cwd(), "--json", "server", "start", "--idle", "120")
    assert started.exit_code == 0, started.stderr
    info = started.json()
    assert info["running"] and info["pid"]
    info["folder"] = folder
    try:
        yield info
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(info["pid"], signal.SIGCONT)
        here(Path.cwd(), "server", "stop")
        await_exit(info["pid"])
        subprocess.run(["rm", "-rf", folder], check=False)
