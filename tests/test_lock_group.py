"""`michi lock run` holds the lock for its command's whole process group (ADR 0003): grandchildren
never outlive it, whether michi is killed, terminated, loses the lock, or its command just exits."""

from __future__ import annotations

import os
import signal
import sys
import threading
from pathlib import Path

import pytest
from conftest import run_michi
from lockkit import TICKER, sentinel_of, start_lock_run, ticker_pid, wait_until

from michi.lock import procs
from michi.lock.procs import start_ticks
from michi.lock.record import read_owner

pytestmark = pytest.mark.slow


def test_a_sigkilled_holders_grandchild_is_ended_before_anyone_else_runs(local_repo: Path) -> None:
    """Its sentinel killed first (by hand, the OOM killer), or it would end the grandchild at once
    (tests/test_lock_sentinel.py): the next taker still does."""
    holder = start_lock_run(local_repo, TICKER)
    grandchild = ticker_pid(local_repo)
    os.kill(sentinel_of(holder.pid), signal.SIGKILL)
    holder.kill()
    holder.wait()
    assert start_ticks(grandchild) is not None  # PR_SET_PDEATHSIG covers the child only
    status = run_michi(local_repo, "--json", "lock", "status").json()
    assert status["reason"] == "orphans" and not status["stale"] and grandchild in status["orphans"]
    after = run_michi(local_repo, "lock", "run", "--wait", "60", "--", "sh", "-c", "echo B >> log")
    assert after.exit_code == 0, after.stderr
    assert "the last holder died or its lease ran out; ended what its command left running" in after.stderr
    assert start_ticks(grandchild) is None
    lines = (local_repo / "log").read_text().splitlines()
    assert lines[-1] == "B"  # nothing of the first command wrote after the second started


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP], ids=["TERM", "HUP"])
def test_sigterm_stops_the_whole_group_before_the_lock_is_released(local_repo: Path, sig: int) -> None:
    """A hang-up (a terminal or ssh session closing) once killed michi outright: the lock stayed with a
    dead holder. It ends the run as SIGTERM does."""
    holder = start_lock_run(local_repo, TICKER)
    grandchild = ticker_pid(local_repo)
    holder.send_signal(sig)
    assert holder.wait(60) == 130
    assert signal.Signals(sig).name in (holder.stderr.read() if holder.stderr else "")
    assert start_ticks(grandchild) is None
    assert not (local_repo / ".michi.lock").exists()
    assert "after" not in (local_repo / "log").read_text()  # the shell was stopped too, not only its child


def test_background_leftovers_are_ended_when_the_command_exits(local_repo: Path) -> None:
    result = run_michi(local_repo, "lock", "run", "--", "sh", "-c", "sleep 300 & echo $! > bg.pid")
    assert result.exit_code == 0
    leftover = int((local_repo / "bg.pid").read_text())
    assert start_ticks(leftover) is None
    assert f"ended what the command left running in its process group (PID {leftover})" in result.stderr


def test_losing_the_lock_stops_the_group(local_repo: Path) -> None:
    holder = start_lock_run(local_repo, TICKER, MICHI_LOCK_TTL="1")
    grandchild = ticker_pid(local_repo)
    forced = run_michi(local_repo, "lock", "release", "--force", "--yes")
    assert forced.exit_code == 0
    assert holder.wait(60) == 75
    assert start_ticks(grandchild) is None
    stderr = holder.stderr.read() if holder.stderr else ""
    assert "lost the repo lock" in stderr and "lock release --force" in stderr


def test_a_paused_holders_command_is_ended_before_the_next_holders_runs(local_repo: Path) -> None:
    """The holder's michi is paused (SIGSTOP) past its lease while its command runs on: the waiter takes
    the lock, as a lease means, but ends that command first. Before, both commands ran at once, the
    paused holder's unguarded. Resumed, the holder exits 75 saying its command was ended."""
    holder = start_lock_run(local_repo, TICKER, MICHI_LOCK_TTL="1")
    grandchild = ticker_pid(local_repo)
    os.kill(holder.pid, signal.SIGSTOP)
    try:
        after = run_michi(local_repo, "lock", "run", "--wait", "60", "--", "sh", "-c", "echo B >> log")
        assert after.exit_code == 0, after.stderr
        assert "ended what its command left running" in after.stderr
        assert start_ticks(grandchild) is None
        assert (local_repo / "log").read_text().splitlines()[-1] == "B"  # nothing of A's after B began
    finally:
        os.kill(holder.pid, signal.SIGCONT)
    assert holder.wait(60) == 75
    stderr = holder.stderr.read() if holder.stderr else ""
    assert "lost the repo lock" in stderr and "it ended what this command ran, unguarded since (PID" in stderr


def test_the_record_names_the_group_and_the_command_sees_its_fence(local_repo: Path) -> None:
    script = "echo $MICHI_LOCK_FENCE > fence; cp .michi.lock/owner.json seen.json 2>/dev/null; true"
    assert run_michi(local_repo, "lock", "run", "--", "sh", "-c", script).exit_code == 0
    assert (
        run_michi(local_repo, "lock", "run", "--", "sh", "-c", script.replace("fence;", "fence2;")).exit_code
        == 0
    )
    first, second = int((local_repo / "fence").read_text()), int((local_repo / "fence2").read_text())
    assert 0 < first < second
    holder = start_lock_run(local_repo, TICKER)
    grandchild = ticker_pid(local_repo)
    owner = read_owner(local_repo / ".michi.lock")
    assert owner is not None and owner.pgid == os.getpgid(grandchild) and owner.pgid != os.getpgrp()
    holder.send_signal(signal.SIGTERM)
    holder.wait(60)


# A holder's grandchild enters the critical section (a mkdir), says so, works a little and leaves; any
# live process found inside is an overlap. Zombies and dead ones are not (they were ended).
GRANDCHILD = r"""
M=$1; O=$2; E=$3
if ! mkdir "$M" 2>/dev/null; then
  other=$(cat "$M/pid" 2>/dev/null)
  state=$(cut -d' ' -f3 "/proc/$other/stat" 2>/dev/null)
  if [ -n "$state" ] && [ "$state" != Z ]; then echo "overlap with $other" >> "$O"; fi
  rm -rf "$M"; mkdir "$M"
fi
echo $$ > "$M/pid"; touch "$E/$TAG"
sleep 0.3
[ "$(cat "$M/pid" 2>/dev/null)" = "$$" ] || echo "overlap: entered meanwhile" >> "$O"
rm -rf "$M"
"""


def test_crash_stress_with_grandchildren_never_overlaps(local_repo: Path, tmp_path: Path) -> None:
    """Real `lock run` processes racing; every third holder is SIGKILLed while its grandchild works."""
    script = tmp_path / "grandchild.sh"
    script.write_text(GRANDCHILD)
    marker, overlaps, entered = tmp_path / "inside", tmp_path / "overlaps", tmp_path / "entered"
    entered.mkdir()
    workers, rounds = 4, 6
    failures: list[str] = []
    killed: list[str] = []

    def worker(index: int) -> None:
        for round_ in range(rounds):
            tag = f"{index}-{round_}"
            cmd = f"sh {script} {marker} {overlaps} {entered}; true"  # sh -> sh: a grandchild
            proc = start_lock_run(local_repo, cmd, TAG=tag, MICHI_LOCK_WAIT="300")
            if (index + round_) % 3 == 0:
                try:
                    wait_until(lambda t=tag: (entered / t).exists(), 300, f"grandchild {tag}")  # type: ignore[misc]
                except AssertionError as exc:
                    failures.append(str(exc))
                proc.kill()
                killed.append(tag)
            code = proc.wait(300)
            if (index + round_) % 3 and code != 0:
                failures.append(f"{tag}: exit {code}: {proc.stderr.read() if proc.stderr else ''}")

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(workers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(600)
    assert not failures
    assert len(killed) == 8
    assert len(list(entered.iterdir())) == workers * rounds  # every holder's grandchild got its turn

    def left() -> bool:  # the last one left, or was ended with its SIGKILLed holder (the sentinel)
        try:
            return start_ticks(int((marker / "pid").read_text())) is None
        except FileNotFoundError:
            return True
        except ValueError:  # being written
            return False

    wait_until(left, 30, "the last one to leave")
    assert not overlaps.exists(), overlaps.read_text()


class Terminal:
    """`michi lock run -- sh -c SCRIPT` on a pseudo-terminal of its own, as a person runs it."""

    def __init__(self, repo: Path, script: str) -> None:
        import pty

        self.pid, self.fd = pty.fork()
        if self.pid == 0:  # pragma: no cover - the child execs at once
            os.chdir(repo)
            os.execv(sys.executable, [sys.executable, "-m", "michi", "lock", "run", "--", "sh", "-c", script])
        self.seen = b""
        lock_dir = repo / ".michi.lock"
        wait_until(lambda: getattr(read_owner(lock_dir), "pgid", None) is not None, 60, "the group")

    def type(self, keys: bytes) -> None:
        os.write(self.fd, keys)

    def shows(self, marker: bytes) -> bool:
        import select

        for _ in range(240):
            if marker in self.seen:
                return True
            if select.select([self.fd], [], [], 0.25)[0]:
                try:
                    self.seen += os.read(self.fd, 4096)
                except OSError:
                    break
        return marker in self.seen

    def exit_code(self) -> int:
        _, status = os.waitpid(self.pid, 0)
        os.close(self.fd)
        return os.waitstatus_to_exitcode(status)


def test_at_a_terminal_the_command_reads_it_and_gets_ctrl_c(local_repo: Path) -> None:
    """The group is the terminal's foreground group while it runs (an editor from `git commit` must
    read the terminal, not stop on SIGTTIN)."""
    term = Terminal(local_repo, "read line; echo got:$line; exec sleep 60")
    term.type(b"hello\n")
    assert term.shows(b"got:hello"), term.seen
    # Ctrl-C once sleep runs: typed between the echo and the exec, sh only notes it and sleep would run
    # its 60 s out (sh exits 130 after it: the test passed, a minute late).
    owner = read_owner(local_repo / ".michi.lock")
    assert owner is not None and owner.pgid is not None
    leader = Path(f"/proc/{owner.pgid}/comm")
    wait_until(lambda: leader.is_file() and leader.read_text().strip() == "sleep", 60, "sleep to run")
    term.type(b"\x03")  # Ctrl-C at the terminal reaches the command's group
    assert term.exit_code() == 130
    assert not (local_repo / ".michi.lock").exists()


def test_ctrl_z_stops_michi_too_and_fg_resumes_the_command(local_repo: Path) -> None:
    """A stopped command must not keep the terminal: michi takes it back and stops, as a job would."""
    term = Terminal(local_repo, "read one; echo got:$one; read two; echo got:$two")
    term.type(b"hello\n")
    assert term.shows(b"got:hello"), term.seen
    term.type(b"\x1a")  # Ctrl-Z
    wait_until(lambda: getattr(procs.stat(term.pid), "state", "") == "T", 60, "michi to stop")
    assert os.tcgetpgrp(term.fd) == os.getpgid(term.pid)  # the terminal is back with michi's group
    os.kill(term.pid, signal.SIGCONT)  # what `fg` does
    term.type(b"world\n")
    assert term.shows(b"got:world"), term.seen
    assert term.exit_code() == 0
