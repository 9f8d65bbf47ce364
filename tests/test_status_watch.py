"""`michi watch` under a real pseudo-terminal: it draws, refreshes when the tasks change, and Ctrl-C (SIGINT)
leaves it cleanly with exit 0 and the cursor restored."""

from __future__ import annotations

import fcntl
import os
import pty
import select
import signal
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

from conftest import run_michi

SHOW_CURSOR = b"\x1b[?25h"


class Screen:
    """What the program wrote to the terminal so far, read as it arrives (select, no sleeps)."""

    def __init__(self, master: int) -> None:
        self.master = master
        self.seen = b""

    def wait_for(self, needle: bytes, start: int = 0, timeout: float = 60.0) -> int:
        """Offset just after the first `needle` at or after `start`; fails after `timeout` seconds."""
        deadline = time.monotonic() + timeout
        while needle not in self.seen[start:]:
            left = deadline - time.monotonic()
            assert left > 0, f"{needle!r} never appeared; screen so far: {self.seen[-2000:]!r}"
            ready, _, _ = select.select([self.master], [], [], left)
            if ready:
                try:
                    chunk = os.read(self.master, 65536)
                except OSError:  # EIO: the program closed the terminal
                    chunk = b""
                assert chunk, f"the terminal closed before {needle!r}: {self.seen[-2000:]!r}"
                self.seen += chunk
        return self.seen.index(needle, start) + len(needle)

    def until_exit(self, proc: subprocess.Popen[bytes], timeout: float = 60.0) -> int:
        """Keep reading, as a terminal does, until `proc` exits: a program blocked writing to a full
        terminal could never finish."""
        deadline = time.monotonic() + timeout
        while proc.poll() is None:
            left = deadline - time.monotonic()
            assert left > 0, f"still running after {timeout}s: {self.seen[-2000:]!r}"
            if select.select([self.master], [], [], min(left, 0.5))[0]:
                try:
                    self.seen += os.read(self.master, 65536)
                except OSError:  # EIO: closed; poll() tells whether it exited
                    proc.wait(timeout=left)
        while select.select([self.master], [], [], 0)[0]:  # what it wrote last
            try:
                chunk = os.read(self.master, 65536)
            except OSError:
                break
            if not chunk:
                break
            self.seen += chunk
        return proc.returncode


def test_watch_refreshes_and_leaves_cleanly_on_ctrl_c(cli, repo: Path) -> None:
    assert cli(repo, "init").exit_code == 0
    assert cli(repo, "task", "add", "first").exit_code == 0
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 140, 0, 0))
    env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": "140", "LINES": "40"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "michi", "watch", "--interval", "0.3"],
        cwd=repo,
        stdin=slave,
        stdout=slave,
        stderr=slave,
        env=env,
        start_new_session=True,  # its own terminal, as a person's shell would give it
    )
    os.close(slave)
    screen = Screen(master)
    try:
        first = screen.wait_for(b"1 todo")
        screen.wait_for(b"task add 1", max(0, first - 2000))  # recent activity, from the Michi-* trailers
        assert run_michi(repo, "--agent", "bot", "task", "add", "second").exit_code == 0
        later = screen.wait_for(b"2 todo", first)  # a refresh picked up the change
        screen.wait_for(b"task add 2", max(0, later - 2000))
        os.kill(proc.pid, signal.SIGINT)
        assert screen.until_exit(proc) == 0
        tail = screen.seen[later:]
        assert SHOW_CURSOR in tail and b"Traceback" not in screen.seen
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(master)


def test_watch_refuses_json(cli, repo: Path) -> None:
    refused = cli(repo, "--json", "watch")
    assert refused.exit_code == 2 and "status --json" in refused.json()["error"]["hint"]


def test_refreshes_leave_no_git_processes_behind(cli, repo: Path) -> None:
    """Each refresh after a change reads through a new GitPython repository; its `git cat-file` helpers
    must not pile up over a long watch. The automatic collector is off here, as it in effect is in a
    watch idling between refreshes (too few allocations to trigger it)."""
    import gc

    import psutil

    from michi.cli import watch
    from michi.session import Session

    assert cli(repo, "init").exit_code == 0
    session = Session(cwd=repo)
    gc.disable()
    try:
        for n in range(5):
            assert run_michi(repo, "task", "add", f"t{n}").exit_code == 0
            watch.frame(session, interval=1, fetch=False, activity=5)
        assert len(psutil.Process().children(recursive=True)) <= 1
    finally:
        gc.enable()
