"""What a command leaves behind that nobody waits for (a staged move's folder, the 6 MB index it replaced
at 50,000 tasks) is removed by a detached `rm` in a process that ends with its command, and at once in
a program that calls michi in its own process (`michi.leftovers`, ADR 0015)."""

from __future__ import annotations

import json
import os
import select
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from michi import leftovers
from tests.conftest import run_michi
from tests.lockkit import await_exit


@pytest.fixture(autouse=True)
def _staged(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MICHI_STAGED_INDEX_BYTES", "0")  # every move staged, as at 50,000 tasks


@dataclass
class HeldRm:
    """An `rm` first on PATH that says who it is and waits to be let go before it removes anything."""

    bin: Path
    ready: Path
    args_file: Path
    gate: Path

    @classmethod
    def make(cls, folder: Path) -> HeldRm:
        real = shutil.which("rm")
        assert real is not None
        held = cls(folder / "bin", folder / "rm.ready", folder / "rm.args", folder / "rm.gate")
        held.bin.mkdir(parents=True)
        os.mkfifo(held.gate)
        os.mkfifo(held.ready)
        script = held.bin / "rm"
        # Python, not a shell: a shell's redirection moves its own standard streams while it lasts.
        script.write_text(
            f"#!{sys.executable} -S\n"
            "import os, sys\n"
            f"streams = [os.readlink(f'/proc/self/fd/{{n}}') for n in (0, 1, 2)]\n"
            f"open({str(held.args_file) + '.fds'!r}, 'w').write(''.join(s + chr(10) for s in streams))\n"
            f"open({str(held.args_file)!r}, 'w').write(''.join(a + chr(10) for a in sys.argv[1:]))\n"
            f"with open({str(held.ready)!r}, 'w') as ready:\n"
            "    ready.write(f'{os.getpid()}' + chr(10))\n"
            f"with open({str(held.gate)!r}) as gate:\n"
            "    gate.read()\n"
            f"os.execv({real!r}, [{real!r}, *sys.argv[1:]])\n"
        )
        script.chmod(0o755)
        return held

    @property
    def path(self) -> str:
        return f"{self.bin}{os.pathsep}{os.environ['PATH']}"

    def pid(self, timeout: float = 30.0) -> int:
        """The rm's PID, once it started and waits at the gate (it writes it to a FIFO: awaited)."""
        fd = os.open(self.ready, os.O_RDONLY | os.O_NONBLOCK)
        said = b""
        try:
            while not said.endswith(b"\n"):
                ready, _, _ = select.select([fd], [], [], timeout)
                assert ready, f"no rm started within {timeout}s"
                chunk = os.read(fd, 64)
                assert chunk or said, "the rm closed its FIFO without a word"
                said += chunk
        finally:
            os.close(fd)
        return int(said)

    def args(self) -> list[str]:
        return self.args_file.read_text().splitlines()

    def streams(self) -> list[str]:
        """Where its standard input, output and error led when it started."""
        return Path(f"{self.args_file}.fds").read_text().splitlines()

    def let_go(self) -> None:
        with open(self.gate, "w") as gate:  # the rm, blocked opening it to read, goes on
            gate.write("go\n")

    def let_go_if_waiting(self) -> None:
        """Unblocks an rm already at the gate, never blocks (a FIFO opened for both never waits)."""
        fd = os.open(self.gate, os.O_RDWR | os.O_NONBLOCK)
        try:
            os.write(fd, b"go\n")
        finally:
            os.close(fd)


@pytest.fixture
def held_rm(tmp_path: Path) -> HeldRm:
    return HeldRm.make(tmp_path)


def _session(pid: int) -> int:
    stat = Path(f"/proc/{pid}/stat").read_text()
    return int(stat.rpartition(")")[2].split()[3])  # the fields after the name: state ppid pgrp session


def assert_detached(held: HeldRm, repo: Path, michi_pid: int | None = None) -> None:
    """The staging folder was handed to the held `rm`, which runs in a session of its own with nothing
    of its caller's open, and removes it once let go."""
    pid = held.pid()
    fd = os.pidfd_open(pid)  # taken while it waits at the gate: the very process
    try:
        flags, dashdash, folder = held.args()
        assert (flags, dashdash) == ("-rf", "--")
        stage = repo / ".git" / "michi" / "stage"
        assert Path(folder).parent == stage
        if michi_pid is not None:
            assert Path(folder).name.startswith(f"{michi_pid}.")
        assert Path(folder).is_dir()  # not removed by michi, nor waited for
        assert _session(pid) == pid
        assert held.streams() == [os.devnull] * 3
        held.let_go()
        ready, _, _ = select.select([fd], [], [], 30.0)
        assert ready, "the detached rm did not end"
    finally:
        os.close(fd)
    assert os.listdir(stage) == []


def _add_one(repo: Path, held: HeldRm, **popen: Any) -> subprocess.Popen[str]:
    """`michi task add one` as its own process (no server), the held `rm` first on its PATH."""
    env = {**os.environ, "PATH": held.path, "MICHI_SERVER": "off"}
    args = [sys.executable, "-m", "michi", "--json", "task", "add", "one"]
    return subprocess.Popen(args, cwd=repo, stderr=subprocess.PIPE, text=True, env=env, **popen)


def test_a_command_ends_without_waiting_for_the_removal_of_its_staging(cli, remote, held_rm: HeldRm) -> None:
    """`michi task add` run as its own process answers and ends while the `rm` of its staging folder
    still waits: the caller reading its output to the end (as an agent does) is not held by it."""
    repo = remote.clone("work")
    assert cli(repo, "init").exit_code == 0
    proc = _add_one(repo, held_rm, stdout=subprocess.PIPE)
    try:
        out, err = proc.communicate(timeout=60)  # EOF on both: no rm holds them
    finally:
        if proc.poll() is None:
            proc.kill()
            held_rm.let_go_if_waiting()
    assert proc.returncode == 0, err
    assert json.loads(out)["id"] == 1
    assert_detached(held_rm, repo, proc.pid)
    assert cli(repo, "--json", "task", "list").json()[0]["description"] == "one"


def test_a_pipe_the_caller_handed_michi_is_not_held_by_the_rm(cli, remote, held_rm: HeldRm) -> None:
    """A caller that handed michi more than its standard streams (an inheritable pipe, as a shell's
    process substitution or a supervisor's status pipe does) and reads it to its end is not held by the
    `rm` either: once michi ended, the pipe is at its end while the `rm` still waits."""
    repo = remote.clone("work")
    assert cli(repo, "init").exit_code == 0
    read_end, write_end = os.pipe()
    try:
        proc = _add_one(repo, held_rm, stdout=subprocess.DEVNULL, pass_fds=(write_end,))
        os.close(write_end)
        try:
            _out, err = proc.communicate(timeout=60)
            assert proc.returncode == 0, err
            # michi is gone, and the rm it started (posix_spawn returns once the rm runs) still waits at
            # its gate: only the rm could hold the write end now.
            ready, _, _ = select.select([read_end], [], [], 5.0)
            assert ready and os.read(read_end, 1) == b"", "the detached rm holds the caller's pipe"
            assert_detached(held_rm, repo, proc.pid)
        finally:
            if proc.poll() is None:
                proc.kill()
            held_rm.let_go_if_waiting()
    finally:
        os.close(read_end)


def test_a_command_removes_its_staging_itself_without_rm(cli, remote, tmp_path: Path) -> None:
    """No `rm` to start (PATH without one): the folder is removed here, as before."""
    repo = remote.clone("work")
    assert cli(repo, "init").exit_code == 0
    bare = tmp_path / "bare-bin"
    bare.mkdir()
    git = shutil.which("git")
    assert git is not None
    (bare / "git").symlink_to(git)
    result = run_michi(repo, "task", "add", "one", env={"PATH": str(bare), "MICHI_SERVER": "off"})
    assert result.exit_code == 0, result.stderr
    assert os.listdir(repo / ".git" / "michi" / "stage") == []


def test_a_program_calling_michi_finds_the_staging_removed_once_the_command_returned(cli, remote) -> None:
    repo = remote.clone("work")
    assert cli(repo, "init").exit_code == 0
    assert cli(repo, "task", "add", "one").exit_code == 0
    assert os.listdir(repo / ".git" / "michi" / "stage") == []


@pytest.fixture
def detached(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(leftovers, "_detached", True)
    monkeypatch.setattr(leftovers, "_started", [])
    yield
    for pid in leftovers._started:
        await_exit(pid)
        leftovers._reap()


def test_a_long_lived_process_keeps_no_finished_rm(detached: None, tmp_path: Path) -> None:
    """`michi mcp` runs many commands: each `rm` it started and that ended is collected at the next."""
    first, second = tmp_path / "first", tmp_path / "second"
    for folder in (first, second):
        (folder / "wt").mkdir(parents=True)
    assert leftovers.remove(str(first))
    [pid] = leftovers._started
    await_exit(pid)  # ended, not yet collected: a zombie of ours
    assert not first.exists()
    assert leftovers.remove(str(second))
    assert pid not in leftovers._started
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)


def test_removal_is_here_when_rm_cannot_be_started(
    detached: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "nothing-here"))
    assert not leftovers.remove(str(tmp_path))
    assert leftovers._started == []


def test_not_detached_leaves_removal_to_the_caller(tmp_path: Path) -> None:
    assert not leftovers._detached  # the tests call michi in their own process
    assert not leftovers.remove(str(tmp_path))
    assert tmp_path.exists()


def test_a_killed_rm_leaves_the_folder_to_the_next_command(cli, remote, held_rm: HeldRm) -> None:
    """An `rm` killed before it removed anything leaves a folder whose process is gone: the next
    changing command removes it (`staged.clear_dead`)."""
    repo = remote.clone("work")
    assert cli(repo, "init").exit_code == 0
    result = run_michi(repo, "task", "add", "one", env={"PATH": held_rm.path, "MICHI_SERVER": "off"})
    assert result.exit_code == 0, result.stderr
    pid = held_rm.pid()
    fd = os.pidfd_open(pid)
    try:
        folder = Path(held_rm.args()[2])
        os.kill(pid, 9)
        ready, _, _ = select.select([fd], [], [], 30.0)
        assert ready
    finally:
        os.close(fd)
    assert folder.is_dir()
    assert cli(repo, "task", "add", "two").exit_code == 0
    assert not folder.exists()
