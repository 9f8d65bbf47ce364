"""The `michi` command's entry point: hand the command to a running server, or run michi here.

A fresh `michi` process pays Python's start-up, then, to run a command itself, the import of typer and of
michi's own modules, several times what the command's git work costs. When a server of this very build
is running (`michi server start`), commands are handed to it instead (all but `lock`, `hook`, `mcp` and
`server`, which run here): this process passes its
arguments, working directory, environment, umask and its stdin/stdout/stderr themselves to the server,
which forks a worker that already has everything imported; the worker runs the command exactly as this
process would have, writing to this process's own terminal or pipes, and this process exits with the
worker's exit code. Ctrl-C and other signals are passed on to the worker; if this process is killed, the
worker is killed too. Any doubt (no server, another user's folder, a server that ends before taking the
request, or one that does not take it within CLAIM_WITHIN: stopped or stuck) and the command runs here,
as without a server; a worker runs it only once it has claimed it, which this process can prevent by
taking it back first (ADR 0016).

The standard library's cheapest modules only: `_socket` and `_signal`, not `socket` and `signal`,
whose enums alone cost more than the rest of this module.
"""

# No `from __future__ import annotations`: that statement imports the __future__ module too.
import _socket  # the socket module's C half: `socket` builds enums on import
import os
import sys

PROTOCOL = b"michi-serve-2"
OFF = ("off", "0", "no", "false")
# Signals a person or a supervisor sends to stop a command: passed on to the worker running it.
FORWARDED = ("SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT")
# Seconds a server has, from the hand-over, to claim a command (a worker does within milliseconds): one
# that is stopped (SIGSTOP, a debugger, a suspended job) or stuck does not, and this process takes the
# command back and runs it itself. A claimed command is never cut, however long it runs (ADR 0016).
CLAIM_WITHIN = 3.0
# Seconds a worker that claimed the command has, from a stop signal, to say its PID (it does within
# milliseconds): one that does not is stopped, stuck or dead, and this process ends as the signal says; the
# worker then finds its caller gone and runs nothing (ADR 0016).
PID_WITHIN = 1.0
# While a worker that claimed the command has not said its PID, this process looks for a stop this often.
STOP_CHECK = 0.25


def main() -> int:
    standard_fds()
    args = sys.argv[1:]
    code = served(args)
    if code is not None:
        # The worker did the command and wrote its output; nothing of this process remains to run or
        # flush, so skip the interpreter's teardown (a few ms of a served command's wall time).
        sys.stderr.flush()
        if code < 0:
            die_of(-code)
        os._exit(code)
    return finish(run_here(args))


def run_here(args: list[str]) -> int:
    """Run the command in this process, which ends with it (`finish`): what it leaves behind that nobody
    waits for is removed detached (`michi.leftovers`)."""
    from michi import leftovers

    leftovers.detach()
    from michi.cli.main import main

    return main(args)


def finish(code: int) -> int:
    """End this process once a command ran here, by `end`: the interpreter's teardown (freeing every
    object and module of michi, typer and rich) cost ~13 ms of `task done`'s wall at 100 tasks and ~18 ms
    at 50,000. `code` is returned instead, for the interpreter's own end, while a thread that is not a
    daemon runs (michi starts none; that end joins a library's), and under a profiler, tracer or debugger
    (`python -m cProfile -m michi`, `-m trace`, `-m pdb`, `python -i`), which report once `main` returned.
    A process holding what it handed a cache writer ends by `end` whatever its threads (freeing that cost
    ~0.05 s at 50,000 tasks). A program that runs this `main` in its own process ends with it;
    `michi.cli.main.main` returns the code instead."""
    if sys.getprofile() is not None or sys.gettrace() is not None or sys.flags.inspect:
        return code
    twocore = sys.modules.get("michi.tasks.twocore")
    threading = sys.modules.get("threading")  # not imported: no thread was started
    if (
        (twocore is not None and twocore.holding())
        or threading is None
        or all(t.daemon or t is threading.main_thread() for t in threading.enumerate())
    ):
        end(code)
    return code


def end(code: int) -> None:
    """End this process with `code` once the command ran here: `wind_up`, then `os._exit`, skipping the
    interpreter's teardown, as a served command's client does. Every thread michi starts is a daemon
    (none is joined at exit), and files are written by `with` blocks or `atomic`."""
    wind_up()
    os._exit(code)


def wind_up() -> None:
    """What a command's process does once the command returned, before it ends by `os._exit` (here, or
    as a served command's worker): its exit handlers (the cache writer waited for: `twocore.at_exit`;
    what the lock's hold put off: `prepared.tidy`) and its output flushed; output the last flush cannot
    write is said on stderr, as `render` says it."""
    import atexit  # built in: nothing to load

    atexit._run_exitfuncs()
    try:
        sys.stdout.flush()
    except Exception as exc:  # a reader gone (EPIPE), a full disk: said, as `render` says it
        why = getattr(exc, "strerror", None) or exc
        try:  # noqa: SIM105  # (contextlib is not loaded by `--version`)
            sys.stderr.write(
                f"michi: the output could not be written ({why}); the exit code is the command's\n"
            )
        except Exception:
            pass
    try:  # noqa: SIM105
        sys.stderr.flush()
    except Exception:  # nowhere left to say it
        pass


def die_of(signum: int) -> None:
    """End this process by signal `signum`, as the worker ended: its caller (a shell, a supervisor, a
    Python `subprocess` reading -N) sees what it would have seen of michi run here, not an exit code."""
    import _signal  # type: ignore[import-not-found]

    if signum != _signal.SIGKILL:  # whose disposition cannot be set (nor caught: it ends us)
        _signal.signal(signum, _signal.SIG_DFL)
    os.kill(os.getpid(), signum)
    os._exit(128 + signum)  # a signal that does not end a process by default (never sent by a kill)


def standard_fds() -> None:
    """Make sure fds 0, 1 and 2 are open, as every program may assume. A caller that closed one (`>&-`)
    would otherwise have the next file michi opens (a task file, the lock's record, the journal) take its
    number, and a git process inheriting it would write there; and Python leaves `sys.stdout` None, so
    a change that landed would end in a crash (exit 1) and an agent would repeat it. A closed one is
    opened on /dev/null: the output is dropped, as the caller asked, and the exit code is the command's."""
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            opened = os.open(os.devnull, os.O_RDWR)  # the lowest free number: `fd` itself
            if opened != fd:
                os.dup2(opened, fd)
                os.close(opened)
    if sys.stdin is None:
        sys.stdin = open(0, closefd=False)  # noqa: SIM115  # the process's own stream, never closed
    if sys.stdout is None:
        sys.stdout = open(1, "w", closefd=False)  # noqa: SIM115
    if sys.stderr is None:
        sys.stderr = open(2, "w", closefd=False)  # noqa: SIM115


# Commands that run in the caller's own process: the lock's (its holder is the caller, or the caller's
# script, by PID), the hook's (git runs it, it must not depend on a server), the MCP server's and the
# server's own.
UNSERVED = frozenset({"lock", "hook", "mcp", "server"})


def servable(args: list[str]) -> bool:
    """Every command but the UNSERVED ones, whatever global options come first."""
    i = 0
    while i < len(args):
        arg = args[i]
        if arg in ("--agent", "-C"):
            i += 2
        elif arg == "--json" or arg.startswith("--agent=") or (arg.startswith("-C") and len(arg) > 2):
            i += 1
        elif arg == "--":  # the end of the options: the command word follows (`michi -- lock acquire`)
            return args[i + 1 : i + 2] != [] and args[i + 1] not in UNSERVED
        else:
            return arg not in UNSERVED and arg != "--version"
    return True  # `michi` alone: its help


def served(args: list[str]) -> int | None:
    """The exit code of `args` run by the server (-N: end by signal N), or None to run them here."""
    mode = os.environ.get("MICHI_SERVER", "").lower()
    if mode in OFF or not servable(args) or _ignores_a_stop():
        return None
    from michi.serve.address import Address

    where = Address()
    if not os.path.exists(where.socket):
        if mode == "auto":
            start_in_background()
        return None
    if not where.trusted():
        return None
    return _ask(where.socket, args, mode)


def _ignores_a_stop() -> bool:
    """Whether this process ignores one of the signals a worker would be sent (`nohup`'s SIGHUP, SIGINT of
    a background job in a script). A worker runs with the default handlers, not the caller's: served, the
    signal its caller ignored stopped the command. Such a caller runs its command here (ADR 0016)."""
    import _signal

    return any(_signal.getsignal(getattr(_signal, name)) == _signal.SIG_IGN for name in FORWARDED)


def _ask(path: str, args: list[str], mode: str) -> int | None:
    import time  # loaded by the interpreter's start-up already

    hand = _Handover()
    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        hand.listen()
        deadline = time.monotonic() + CLAIM_WITHIN
        try:
            sock.settimeout(CLAIM_WITHIN)  # a stopped server's full backlog refuses the connect at once
            sock.connect(path)
            if _peer_uid(sock) != os.getuid():
                hand.here()
                return None
            hand.mailbox = _mailbox()
            _send(sock, _request(args), hand.mailbox)
        except OSError:  # a server that died and left its socket, or one going away: run here
            if hand.take_back():
                if mode == "auto":
                    start_in_background()
                hand.here()
                return None
        return _await(sock, hand, deadline)
    except _Withdrawn as stop:
        return _stopped(stop.args[0], args)
    finally:
        sock.close()
        if hand.mailbox is not None:
            hand.mailbox.close()


class _Withdrawn(Exception):
    """A stop signal (its number the argument) came before a worker claimed the command: taken back, the
    command runs nowhere."""


def mailbox_fds(box: _socket.socket) -> list[int] | None:
    """The streams in a mailbox's one datagram, received (the caller's stdin, stdout and stderr); None
    when it is empty: the other side, a worker claiming or the caller taking back, had them first. Not
    `socket.recv_fds`, which drops its flags before Python 3.12 and would wait."""
    try:
        _, ancillary, _, _ = box.recvmsg(1, _socket.CMSG_SPACE(3 * 4), _socket.MSG_DONTWAIT)
    except BlockingIOError:
        return None
    return [
        int.from_bytes(data[i : i + 4], sys.byteorder, signed=True)
        for level, kind, data in ancillary
        if (level, kind) == (_socket.SOL_SOCKET, _socket.SCM_RIGHTS)
        for i in range(0, len(data) - 3, 4)
    ]


class _Handover:
    """One command handed to the server, claimed by a worker or taken back by this process, never both.

    The caller's stdin, stdout and stderr wait in a mailbox: one datagram in a socket pair, whose
    receiving end goes to the server with the request. A worker claims the command by receiving them
    (nothing runs before); this process takes it back by receiving them itself, when the server does not
    claim it within CLAIM_WITHIN or a stop signal comes first. The kernel gives the datagram to one of
    the two. Taken back, nothing of the caller is left in a stopped server's queue to hold its pipes
    open (ADR 0016)."""

    def __init__(self) -> None:
        self.worker = 0  # its PID, once it said it: it claimed the command first
        self.mailbox: _socket.socket | None = None
        self.taken_back = False
        self.pending: list[int] = []  # signals for a worker that claimed the command and has not said so
        self.stop_by = 0.0  # the first of them came: the PID by then, or this process ends (`_await`)
        self.previous: dict[int, object] = {}

    def listen(self) -> None:
        import _signal

        for name in FORWARDED:
            signum = getattr(_signal, name)
            self.previous[signum] = _signal.signal(signum, self.on_signal)

    def on_signal(self, signum: int, frame: object) -> None:
        if self.worker:
            self.forward(signum)
        elif self.taken_back or not self.take_back():
            if not self.pending:
                import time

                self.stop_by = time.monotonic() + PID_WITHIN
            self.pending.append(signum)  # claimed: passed on once the worker says who it is
        else:  # wherever this process is (a wait, a send): taken back, nothing of it is needed any more
            raise _Withdrawn(signum)

    def forward(self, signum: int) -> None:
        try:  # noqa: SIM105  # (contextlib is not loaded here)
            os.kill(self.worker, signum)
        except ProcessLookupError:  # it ended meanwhile: its exit status is on its way
            pass

    def take_back(self) -> bool:
        """Take the command back unless a worker claimed it: True when no worker ever runs it."""
        if self.mailbox is not None:
            fds = mailbox_fds(self.mailbox)
            if fds is None:
                return False  # a worker has the caller's streams: the command is its
            for fd in fds:  # this process's own streams, received again
                os.close(fd)
        self.taken_back = True
        return True

    def here(self) -> None:
        """Before the command runs here: the signal handling it had, and a stop that came meanwhile."""
        import _signal

        for signum, handler in self.previous.items():
            _signal.signal(signum, _signal.SIG_DFL if handler is None else handler)
        if self.pending:
            raise _Withdrawn(self.pending[0])


def _stopped(signum: int, args: list[str]) -> int:
    """As michi run here ends when stopped before its command began (`michi.cli.main`): Ctrl-C says
    `interrupted`, SIGTERM and SIGHUP `terminated` (130, ADR 0004); another signal (SIGQUIT) ends the
    process as its default action does (-N: `main` dies of it)."""
    import _signal

    if signum not in (_signal.SIGINT, _signal.SIGTERM, _signal.SIGHUP):
        return -signum
    from michi.cli.main import interrupted, split_json_flag

    json_mode = split_json_flag(args)[1]
    if signum == _signal.SIGINT:
        code = interrupted(json_mode)
    else:
        from michi.cli import render
        from michi.lock.errors import terminated_by

        code = render.fail(terminated_by(signum), json_mode)
    try:  # noqa: SIM105  # (contextlib is not loaded here)
        sys.stdout.flush()
    except Exception:  # a reader gone: the exit code is what counts
        pass
    return code


def _peer_uid(sock: _socket.socket) -> int:
    creds = sock.getsockopt(_socket.SOL_SOCKET, _socket.SO_PEERCRED, 12)  # struct ucred: pid, uid, gid
    return int.from_bytes(creds[4:8], sys.byteorder)


def _request(args: list[str]) -> bytes:
    mask = os.umask(0o022)
    os.umask(mask)
    fields = [PROTOCOL, str(len(args) + 1).encode(), *map(os.fsencode, [sys.argv[0], *args])]
    fields += [os.fsencode(os.getcwd()), b"%o" % mask]
    fields += [key + b"=" + value for key, value in os.environb.items()]
    body = b"\0".join(fields)
    return len(body).to_bytes(4, "big") + body


def _mailbox() -> _socket.socket:
    """A socket pair's receiving end, holding one datagram with this process's stdin, stdout and stderr."""
    kind = _socket.SOCK_DGRAM | _socket.SOCK_CLOEXEC | _socket.SOCK_NONBLOCK  # no reader ever waits on it
    theirs, ours = _socket.socketpair(_socket.AF_UNIX, kind)
    try:
        fds = b"".join(fd.to_bytes(4, sys.byteorder, signed=True) for fd in (0, 1, 2))
        theirs.sendmsg([b"m"], [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, fds)])
    finally:
        theirs.close()
    return ours


def _send(sock: _socket.socket, data: bytes, mailbox: _socket.socket) -> None:
    fds = mailbox.fileno().to_bytes(4, sys.byteorder, signed=True)
    sent = sock.sendmsg([data], [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, fds)])
    if sent < len(data):
        sock.sendall(data[sent:])


def _await(sock: _socket.socket, hand: _Handover, deadline: float) -> int | None:
    """Read the worker's pid (`P123`: it claimed the command) and exit code (`X0`). No pid: nothing
    ran, so run here; none within CLAIM_WITHIN: take the command back and run it here. A stop signal
    after the claim and no pid within PID_WITHIN of it: end as stopped (the worker, should it wake,
    finds this process gone and runs nothing)."""
    import time

    buffer = b""
    claimed = False
    while True:
        if not hand.worker and hand.pending:  # claimed: the handler could not take the command back
            left = hand.stop_by - time.monotonic()
            if left <= 0:
                raise _Withdrawn(hand.pending[0])
            sock.settimeout(left)
        elif not hand.worker and not claimed:
            left = deadline - time.monotonic()
            if left <= 0:
                if hand.take_back():
                    hand.here()
                    sys.stderr.write(
                        f"michi: the michi server did not take the command within {CLAIM_WITHIN:g} s"
                        " (stopped or stuck? see 'michi server status'): running it here\n"
                    )
                    return None
                claimed = True  # a worker has it but has not said so yet: it runs there, however long
                sock.settimeout(STOP_CHECK)  # but a stop signal meanwhile is heeded (PID_WITHIN)
            else:  # a stop signal meanwhile that finds the command claimed is heeded within PID_WITHIN
                sock.settimeout(min(left, STOP_CHECK))
        try:
            chunk = sock.recv(256)
        except TimeoutError:
            continue
        except OSError:
            chunk = b""
        if not chunk:
            if not hand.worker:  # the worker (if one claimed the command) ended before it ran anything
                hand.take_back()
                hand.here()
                return None
            sys.stderr.write(
                "michi: error: the michi server's worker ended without an exit status\n"
                "  hint: see 'michi server status'; MICHI_SERVER=off runs michi without it\n"
            )
            return 1
        buffer += chunk
        while b"\n" in buffer:
            line, buffer = buffer.split(b"\n", 1)
            if line[:1] == b"P":
                hand.worker = int(line[1:])
                sock.settimeout(None)  # claimed: the command is never cut
                if os.environ.get("MICHI_DEBUG"):
                    sys.stderr.write(f"michi: served by the michi server (worker PID {hand.worker})\n")
                for signum in hand.pending:
                    hand.forward(signum)
            elif line[:1] == b"X":
                if hand.worker:
                    return int(line[1:])
                # Without a PID first, the worker ended before it ran anything (e.g. it could not enter
                # this directory): run the command here.
                hand.take_back()
                hand.here()
                return None


def start_in_background() -> None:
    """Start this build's server for the calls to come (`MICHI_SERVER=auto`); this call runs here."""
    import subprocess

    subprocess.Popen(
        [sys.executable, "-m", "michi.serve.server"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
