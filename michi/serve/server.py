"""The forking server (ADR 0016): imports michi once, then forks a worker per served command.

`python -m michi.serve.server [--idle SECONDS] [--foreground]`, or `michi server start`. One server per
user and michi build (`michi.serve.address`): a second one exits at once. It ends after `--idle` seconds
without a request (default 900, `MICHI_SERVER_IDLE`), on SIGTERM (`michi server stop`), or as soon as
michi's own files change on disk (an upgrade): its next client then runs the command itself.
"""

from __future__ import annotations

import contextlib
import fcntl
import gc
import json
import os
import select
import signal
import socket
import sys
import time
from pathlib import Path
from typing import Any

import michi
from michi.atomic import write_atomic
from michi.serve import worker  # imported here, once, rather than in every fork
from michi.serve.address import Address

IDLE = 900.0
SOURCES_EVERY = 1.0  # how often, at most, michi's files are checked for an upgrade


def preload() -> None:
    """Everything a served command imports, and the parts of the CLI every command builds."""
    import importlib
    import pkgutil

    for info in pkgutil.walk_packages(michi.__path__, "michi."):
        if info.name.startswith(("michi.mcp", "michi.serve", "michi.__main__")):
            continue
        with contextlib.suppress(ImportError):
            importlib.import_module(info.name)
    import ctypes  # noqa: F401  (the spares' prctl, loaded once here rather than in every fork)

    rich = ("rich.console", "rich.table", "rich.text", "rich.panel", "rich.markup", "rich.highlighter")
    # Imported on first use inside a command (click's help option on every parse, its text wrapper for
    # help, rich's emoji table when rendering): once here rather than in every worker.
    lazy = ("typer._click.decorators", "typer._click._textwrap", "rich._emoji_codes", "atexit")
    for name in (*rich, *lazy):
        with contextlib.suppress(ImportError):
            importlib.import_module(name)
    from michi.cli.app import preload_app

    preload_app()
    warm_parse()


# The served changes' command lines, parsed once in the server with `--help` (nothing runs, nothing is
# read): the first parse in a process fills click's and typer's lazy state, ~1 ms more than a later one.
WARM_PARSES = (("task", "add"), ("task", "done"), ("task", "next"), ("task", "claim"), ("task", "start"))


def warm_parse() -> None:
    """Every worker's first parse is then its process's second (ADR 0016). The help text goes nowhere."""
    import io

    from michi.cli.main import main as run

    sink = io.StringIO()
    with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
        for words in WARM_PARSES:
            run(["--json", *words, "--help"])


def sources() -> dict[str, int]:
    """michi's files and their modification times: a change means an upgrade under a running server."""
    root = Path(michi.__file__).parent
    return {str(path): path.stat().st_mtime_ns for path in root.rglob("*.py")}


SPARES = 2  # workers forked ahead, waiting in accept(): a request never waits for a fork (see `_wanted`)


class Server:
    """The parent: keeps SPARES forked workers waiting on the socket, learns from each one that takes a
    client (its PID, the client's PID and the connection), forks a replacement, and reports the exit
    of every worker that dies without sending its own."""

    def __init__(self, where: Address, idle: float) -> None:
        self.where = where
        self.idle = idle
        self.spares: set[int] = set()
        self.workers: dict[int, tuple[socket.socket, int]] = {}  # worker pid -> (connection, client pid)
        self.served = 0
        self.started = time.time()
        self.last = time.monotonic()
        self.stopping = False
        self.files = sources()
        self.checked = time.monotonic()

    def serve(self, held: list[int]) -> None:
        wake_r, wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        signal.set_wakeup_fd(wake_w)
        signal.signal(signal.SIGCHLD, lambda *_: None)
        signal.signal(signal.SIGTERM, self._stop)
        signal.signal(signal.SIGINT, self._stop)
        news, told = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)  # workers -> parent
        news.setblocking(False)  # `_taken` reads every queued hand-over, then finds the queue empty
        self._describe()  # before the socket: whoever sees the socket finds the description
        listener = self._listen()
        closed_in_workers = [wake_r, wake_w, news.fileno(), *held]
        gc.freeze()  # the preloaded modules stay shared with every worker (copy-on-write)
        try:
            while not self.stopping:
                while len(self.spares) < self._wanted():
                    self._spawn(listener, told, closed_in_workers)
                timeout = 1.0 if self.workers else max(0.05, self.idle - (time.monotonic() - self.last))
                waits: list[Any] = [news, wake_r]
                ready, _, _ = select.select(waits, [], [], min(timeout, SOURCES_EVERY * 5))
                if wake_r in ready:
                    with contextlib.suppress(BlockingIOError):
                        os.read(wake_r, 4096)
                self._reap(news, os.WNOHANG)  # reads the hand-overs too (`news` only wakes the loop)
                if self._upgraded() or (not self.workers and time.monotonic() - self.last >= self.idle):
                    break
        finally:
            self._close(listener, news)
        while self.workers:  # the running commands end on their own; report how, then go
            if not self._reap(news, 0):
                break

    def _wanted(self) -> int:
        """Spares to keep now: SPARES while no command runs; while one does, one, so that the fork of a
        replacement (its page tables, its start-up: CPU on a 2-core machine) does not run beside that
        command: it is made once the command ends, while its caller reads the answer."""
        return SPARES if not self.workers else 1

    def _listen(self) -> socket.socket:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.where.socket)  # a dead server's: we hold the lock, so no live one has it
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(self.where.socket)
        os.chmod(self.where.socket, 0o600)
        listener.listen(128)
        return listener

    def _spawn(self, listener: socket.socket, told: socket.socket, closed: list[int]) -> None:
        # A spare copies the server's pages before it accepts (~20 MB, a few ms): only when no command
        # runs (`_wanted` forks then) or another spare already waits, so that no client waits for it.
        warm = not self.workers or bool(self.spares)
        pid = os.fork()
        if pid == 0:
            worker.standby(listener, told, closed, warm)
        self.spares.add(pid)

    def _taken(self, news: socket.socket) -> None:
        """Spares took clients: each is its client's worker now. Every queued hand-over is read: several
        wait after the server was stopped (SIGSTOP) while spares took clients."""
        taken = False
        while True:
            try:
                data, fds, _, _ = socket.recv_fds(news, 64, 1)
            except OSError:  # BlockingIOError: none left
                break
            if not fds:
                continue
            pid, client = (int(n) for n in data.split())
            conn = socket.socket(fileno=fds[0])
            self.spares.discard(pid)
            self.workers[pid] = (conn, client)
            self.served += 1
            self.last = time.monotonic()
            taken = True
        if taken:
            self._describe()  # once for them all: a file written atomically

    def _reap(self, news: socket.socket, flags: int) -> bool:
        """Report the end of every child that ended (`flags` 0: wait for one first); False if none is left.
        A worker's hand-over is queued before it can die, so reading the queue after `waitpid` and before
        the report knows every dead worker's client: one killed before the server read its hand-over (the
        server stopped meanwhile) was once reaped as a spare, and its client waited for ever (ADR 0016)."""
        ended: list[tuple[int, int]] = []
        while True:
            try:
                pid, status = os.waitpid(-1, flags)
            except ChildProcessError:
                break
            if pid == 0:
                break
            ended.append((pid, status))
            flags = os.WNOHANG
        self._taken(news)
        for pid, status in ended:
            self.spares.discard(pid)
            self._report(pid, status)
        return bool(ended)

    def _report(self, pid: int, status: int) -> None:
        """The worker's exit code for its client: the worker sends its own first; this one counts when
        the worker died before it could (killed). A worker killed by signal N is sent as `X-N`: the
        client then dies of N itself, as the command's own process would have."""
        entry = self.workers.pop(pid, None)
        if entry is None:
            return
        conn, _ = entry
        code = os.waitstatus_to_exitcode(status)
        with contextlib.suppress(OSError):
            conn.sendall(b"X%d\n" % code)
        conn.close()
        self.last = time.monotonic()
        self._describe()

    def _upgraded(self) -> bool:
        if time.monotonic() - self.checked < SOURCES_EVERY:
            return False
        self.checked = time.monotonic()
        try:
            return sources() != self.files
        except OSError:
            return True

    def _stop(self, signum: int, frame: object) -> None:
        self.stopping = True

    def _describe(self) -> None:
        """`michi server status` reads this: who serves, since when, how much, for whom right now."""
        info: dict[str, Any] = {
            "pid": os.getpid(),
            "started": self.started,
            "socket": self.where.socket,
            "idle_timeout": self.idle,
            "served": self.served,
            "version": michi.__version__,
            "python": sys.executable,
            "workers": [{"pid": pid, "client": client} for pid, (_, client) in self.workers.items()],
        }
        write_atomic(Path(self.where.info), json.dumps(info).encode())

    def _close(self, listener: socket.socket, news: socket.socket) -> None:
        """Stop taking requests: remove the socket first, so clients run commands themselves (it is ours:
        only the holder of the lock file binds it), then end the spares; one whose hand-over is queued is
        a worker, left to finish. A spare that took a client in that instant is killed: its client runs
        the command itself, or, had the worker said its PID, dies of SIGKILL as the worker did."""
        with contextlib.suppress(OSError):
            os.unlink(self.where.socket)
        self._taken(news)
        for pid in self.spares:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        listener.close()
        with contextlib.suppress(OSError):
            os.unlink(self.where.info)


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    idle = float(os.environ.get("MICHI_SERVER_IDLE") or IDLE)
    if "--idle" in args:
        idle = float(args[args.index("--idle") + 1])
    where = Address()
    os.makedirs(where.folder, mode=0o700, exist_ok=True)
    if not where.trusted():
        sys.stderr.write(f"michi server: {where.folder} is not yours alone (mode 700, owned by you)\n")
        return 2
    lock = os.open(where.lock, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return 0  # this build's server is running already
    for stale in (where.socket, where.info):  # a killed server's: nobody answers there
        with contextlib.suppress(FileNotFoundError):
            os.unlink(stale)
    if "--foreground" not in args:
        null = os.open(os.devnull, os.O_RDWR)
        log = os.open(where.log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
        os.dup2(null, 0)
        os.dup2(null, 1)
        os.dup2(log, 2)
        os.close(null)
        os.close(log)
    preload()
    Server(where, idle).serve([lock])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
