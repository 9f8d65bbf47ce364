"""`michi task list` in a real terminal, 80 columns wide: a pseudo-terminal (the bytes michi writes) and
tmux (what a person sees, wrapped lines joined back). No line is wider than the terminal; the most urgent
task comes first; colour only when allowed."""

from __future__ import annotations

import fcntl
import os
import re
import select
import shutil
import struct
import subprocess
import sys
import termios
from pathlib import Path

import pytest
from rich.cells import cell_len

ESCAPES = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07")
LONG = "Rewrite the session store so that a cookie which expires in the middle of a request never loops"


@pytest.fixture
def tasks(cli, repo: Path) -> Path:
    assert cli(repo, "init").exit_code == 0
    cli(repo, "task", "add", LONG + " back to the login page", "-t", "auth", "--project", "web")
    cli(repo, "task", "add", "Small chore")
    cli(repo, "task", "add", "The most urgent one", "-p", "H")
    cli(repo, "task", "annotate", "1", "seen twice in production")
    return repo


def in_pty(cwd: Path, *args: str, env: dict[str, str] | None = None, columns: int = 80) -> str:
    """What `michi ARGS` writes to a terminal `columns` wide, read until it exits (bounded in time)."""
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, columns, 0, 0))
    environ = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR", "COLUMNS")}
    environ.update({"TERM": "xterm-256color", **(env or {})})
    proc = subprocess.Popen(
        [sys.executable, "-m", "michi", *args],
        cwd=cwd,
        stdin=slave,
        stdout=slave,
        stderr=subprocess.DEVNULL,
        env=environ,
        close_fds=True,
    )
    os.close(slave)
    chunks: list[bytes] = []
    try:
        while True:
            ready, _, _ = select.select([master], [], [], 60)
            assert ready, "michi wrote nothing to the terminal for 60 s"
            try:
                data = os.read(master, 65536)
            except OSError:  # EIO: the child closed the terminal
                break
            if not data:
                break
            chunks.append(data)
    finally:
        os.close(master)
        assert proc.wait(timeout=60) == 0
    return b"".join(chunks).decode("utf-8").replace("\r\n", "\n")


def rows(plain: str) -> list[str]:
    """The task rows: after the header (and its dashes, in plain output), before the counts line."""
    lines = [line for line in plain.splitlines() if line.strip()]
    body = lines[2:-1] if set(lines[1].replace(" ", "")) == {"-"} else lines[1:-1]
    return body


def test_a_terminal_80_columns_wide(tasks: Path) -> None:
    raw = in_pty(tasks, "task", "list")
    assert ESCAPES.search(raw), "a terminal gets colour"
    plain = ESCAPES.sub("", raw)
    assert all(cell_len(line) <= 80 for line in plain.splitlines()), plain
    first = rows(plain)[0].split()
    assert first[0] == "3" and "urgent" in first, plain
    assert "…" in plain and "[1]" in plain  # the long description was cut, its annotation counted
    assert plain.rstrip().endswith("3 tasks")


@pytest.mark.parametrize(("env", "flag"), [({"NO_COLOR": "1"}, []), ({}, ["--no-color"])])
def test_no_color_means_no_escape_codes(tasks: Path, env: dict[str, str], flag: list[str]) -> None:
    for args in (["task", "list", *flag], ["task", "show", "1", *flag]):
        out = in_pty(tasks, *args, env=env)
        assert "\x1b" not in out, out
        assert all(cell_len(line) <= 80 for line in out.splitlines())


def test_wide_wraps_descriptions_whole_inside_80_columns(tasks: Path) -> None:
    plain = ESCAPES.sub("", in_pty(tasks, "task", "list", "--wide"))
    assert all(cell_len(line) <= 80 for line in plain.splitlines()), plain
    assert "…" not in plain and "login page [1]" in " ".join(plain.split())


def test_through_a_pipe_lines_are_whole_and_plain(tasks: Path, michi_proc) -> None:
    out = michi_proc(tasks, "task", "list").stdout
    assert "\x1b" not in out and LONG + " back to the login page [1]" in out


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
def test_under_tmux_no_line_wraps(tasks: Path, tmp_path: Path) -> None:
    """tmux draws what a person sees; `capture-pane -J` joins lines the terminal wrapped, so a line
    wider than 80 columns would show up as one long line."""
    socket = str(tmp_path / "tmux.sock")
    tmux = ["tmux", "-S", socket, "-f", "/dev/null"]
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "COLUMNS", "TMUX")}
    script = tmp_path / "run.sh"
    script.write_text(
        f"cd {tasks}\n{sys.executable} -m michi task list 2>/dev/null\n"
        f"tmux -S {socket} wait-for -S listed\nsleep 60\n"
    )
    start = [*tmux, "new-session", "-d", "-x", "80", "-y", "40", "sh", str(script)]
    subprocess.run(start, check=True, env=env, timeout=30)
    try:
        subprocess.run([*tmux, "wait-for", "listed"], check=True, env=env, timeout=60)
        shown = subprocess.run(
            [*tmux, "capture-pane", "-p", "-J"],
            check=True,
            env=env,
            timeout=30,
            capture_output=True,
            text=True,
        ).stdout
    finally:
        subprocess.run([*tmux, "kill-server"], env=env, timeout=30, check=False)
    lines = [line.rstrip() for line in shown.splitlines() if line.strip()]
    assert all(cell_len(line) <= 80 for line in lines), shown
    assert rows("\n".join(lines))[0].split()[0] == "3", shown
