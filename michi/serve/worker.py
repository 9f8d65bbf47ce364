"""One served command, in a process forked from the server (ADR 0016).

The worker becomes the client as far as the command can tell: the client's stdin, stdout and stderr
(in a mailbox passed over the socket), its working directory, environment, umask and arguments. It
claims the command (`_claim`: the client may have taken it back, and then the worker runs nothing),
tells the client its PID, runs `michi.cli.main.main`, and sends the exit code. When the client goes away
without waiting for the end (killed), the worker kills itself: a command stops where its caller stopped,
as it would have without a server.
"""

from __future__ import annotations

import _thread
import atexit
import contextlib
import io
import os
import signal
import socket
import sys
import threading
from typing import Any, NoReturn

from michi import faults
from michi.serve import caller, prefault
from michi.serve.client import PROTOCOL, mailbox_fds, run_here, wind_up

MAX_REQUEST = 4 << 20  # arguments and environment: far beyond any real one (Linux caps both at 2 MiB)


class BadRequest(Exception):
    pass


class Withdrawn(Exception):
    """The client took its command back before this worker claimed it: it runs it itself, or was stopped."""


class Request:
    def __init__(self, argv: list[str], cwd: str, umask: int, env: list[bytes], fds: list[int]) -> None:
        self.argv, self.cwd, self.umask, self.env, self.fds = argv, cwd, umask, env, fds


def standby(listener: socket.socket, told: socket.socket, closed: list[int], warm: bool) -> NoReturn:
    """A spare's whole life, forked ahead of need: (`warm`: copy the server's pages first,
    `michi.serve.prefault`), wait for a client, tell the server (which reports this process's end to
    the client should it die without a word), then serve it. Never returns into the server's loop."""
    code = 1
    try:
        for fd in closed:
            os.close(fd)
        atexit._clear()  # the server's: this process ends by `os._exit`, running only its command's
        _reset_signals()
        parent = os.getppid()
        _die_with_parent(signal.SIGKILL)  # a spare outliving its server would wait forever
        if os.getppid() != parent:
            os._exit(1)
        if warm:
            prefault.now()  # its own copy of the server's pages, before a client can be waiting for it
        while True:
            conn, _ = listener.accept()
            creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12)
            if int.from_bytes(creds[4:8], sys.byteorder) == os.getuid():
                break
            conn.close()  # another user's process: not ours to serve
        listener.close()
        _die_with_parent(0)  # from here on a command runs: it finishes even if the server goes
        client = int.from_bytes(creds[:4], sys.byteorder)
        socket.send_fds(told, [b"%d %d" % (os.getpid(), client)], [conn.fileno()])
        told.close()
        code = _serve(conn, client)
    except BaseException:  # nothing sent: the server reports how this process ended
        code = 1
    finally:
        os._exit(code)


def _die_with_parent(signum: int) -> None:
    """prctl(PR_SET_PDEATHSIG): `signum` when the server ends (0: nothing). Linux; elsewhere a no-op."""
    import ctypes

    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(1, signum, 0, 0, 0)  # 1 = PR_SET_PDEATHSIG


def _serve(conn: socket.socket, client: int) -> int:
    request = receive(conn)
    _become(request, client)
    done = threading.Event()
    try:
        conn.sendall(b"P%d\n" % os.getpid())
        # Not `threading.Thread.start()`, which waits until the new thread runs: a wait on the command's
        # path (ms on a busy machine) for a thread that only waits. This process ends by `os._exit`.
        _thread.start_new_thread(_watch, (conn, done))
        code = _main(request.argv[1:])
    except KeyboardInterrupt:  # Ctrl-C (passed on by the client) before the command's own handling began
        from michi.cli.main import interrupted, split_json_flag

        code = interrupted(split_json_flag(request.argv[1:])[1])
        _flush()
    done.set()
    conn.sendall(b"X%d\n" % code)
    return code


def _reset_signals() -> None:
    """As a fresh Python process has them (the server's own handlers are for the server)."""
    signal.set_wakeup_fd(-1)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    for name in ("SIGTERM", "SIGHUP", "SIGQUIT", "SIGCHLD"):
        signal.signal(getattr(signal, name), signal.SIG_DFL)


def receive(conn: socket.socket) -> Request:
    """The request, and in `fds` its mailbox: the client's stdin, stdout and stderr, for `_claim`."""
    data, fds, flags, _ = socket.recv_fds(conn, 1 << 16, 1)
    if flags & socket.MSG_CTRUNC or len(fds) != 1:
        raise BadRequest("expected the mailbox of stdin, stdout and stderr")
    if len(data) < 4:
        raise BadRequest("short request")
    size = int.from_bytes(data[:4], "big")
    if size > MAX_REQUEST:
        raise BadRequest("request too large")
    body = data[4:]
    while len(body) < size:
        chunk = conn.recv(min(1 << 16, size - len(body)))
        if not chunk:
            raise BadRequest("request cut short")
        body += chunk
    fields = body.split(b"\0")
    if fields[0] != PROTOCOL:
        raise BadRequest("another protocol")
    count = int(fields[1])
    argv = [os.fsdecode(arg) for arg in fields[2 : 2 + count]]
    cwd, umask = os.fsdecode(fields[2 + count]), int(fields[3 + count], 8)
    return Request(argv, cwd, umask, fields[4 + count :], fds)


def _become(request: Request, client: int) -> None:
    caller.become(client)  # first: a caller elsewhere (a sandbox) has nothing run for it here
    os.environ.clear()
    for item in request.env:
        key, sep, value = item.partition(b"=")
        if sep and key:
            os.environb[key] = value
    os.chdir(request.cwd)
    os.umask(request.umask)
    sys.argv = request.argv
    tempfile: Any = sys.modules.get("tempfile")
    if tempfile is not None:  # it caches TMPDIR on first use: the client's counts
        tempfile.tempdir = None
    from michi.lock import procs

    procs.act_for(client)
    # Last, after every step that may refuse: the command is this worker's from here on (its PID next).
    for target, fd in zip((0, 1, 2), _claim(request.fds[0]), strict=True):
        os.dup2(fd, target)
        if fd > 2:
            os.close(fd)
    _fresh_stdio()


def _claim(mailbox: int) -> list[int]:
    """Claim the command: receive the client's stdin, stdout and stderr from its mailbox (a socket pair's
    end holding one datagram). The client receives them itself to take the command back (it waited
    CLAIM_WITHIN, or a stop signal came); the kernel gives the datagram to one of the two (ADR 0016)."""
    faults.point("claiming")
    with socket.socket(fileno=mailbox) as box:
        fds = mailbox_fds(box) or []  # empty: taken back
    if len(fds) != 3:
        for fd in fds:
            os.close(fd)
        raise Withdrawn
    faults.point("claimed")
    return fds


def _fresh_stdio() -> None:
    """Text streams over fds 0-2 as Python makes them at start-up, for the client's terminal or pipes."""
    encoding = os.environ.get("PYTHONIOENCODING", "").split(":")[0] or "utf-8"
    unbuffered = bool(os.environ.get("PYTHONUNBUFFERED"))

    def stream(fd: int, mode: str, errors: str, line: bool) -> io.TextIOWrapper:
        raw = io.FileIO(fd, mode, closefd=False)
        buffered = io.BufferedReader(raw) if mode == "r" else io.BufferedWriter(raw)
        return io.TextIOWrapper(
            buffered, encoding=encoding, errors=errors, line_buffering=line, write_through=unbuffered
        )

    sys.stdin = stream(0, "r", "strict", False)
    sys.stdout = stream(1, "w", "strict", os.isatty(1))
    sys.stderr = stream(2, "w", "backslashreplace", True)
    for name in ("stdin", "stdout", "stderr"):  # what some libraries fall back to
        setattr(sys, f"__{name}__", getattr(sys, name))


def _watch(conn: socket.socket, done: threading.Event) -> None:
    """The client sends nothing more: the connection ends only when the client does."""
    with contextlib.suppress(OSError):
        conn.recv(1)
    if not done.is_set():
        os.kill(os.getpid(), signal.SIGKILL)


def _main(args: list[str]) -> int:
    from michi.git import repo

    repo.AWAIT_CLOSE = False  # this process ends with the command: its cat-files end with it

    try:
        code = run_here(args)  # as a command run here: what it leaves behind is removed detached
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    # As a command run here ends (the server's own exit handlers were cleared at the fork, `standby`).
    wind_up()
    return code


def _flush() -> None:
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
