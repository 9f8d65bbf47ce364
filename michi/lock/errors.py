"""The lock's errors. Agents match on `code`; timeouts and contention share `lock_busy` (exit 75)."""

from __future__ import annotations

from typing import Any

from michi.durations import duration, stamp
from michi.errors import Conflict, ExitCode, Interrupted, LockError, MichiError, UsageError
from michi.lock.record import Owner


class Answered(Exception):
    """A waiter's work was done by the lock's holder (group commit, ADR 0017): it need not hold the lock."""


CLEAR_HINT = (
    "wait and retry (--wait SECONDS); if the holder is gone, `michi lock status` says whether the lock is "
    "stale and `michi lock release --force` clears it"
)

OWN_HOLDER_HINT = (
    "this michi runs under the process that holds the lock: give it the lock's token, "
    '`eval "$(michi lock acquire --export)"` (or MICHI_LOCK_TOKEN=TOKEN), and it works under that lock'
)


def _under(owner: Owner | None) -> bool:
    """Whether we descend from the holder (a script waiting on its own lock would wait forever)."""
    from michi.lock import procs
    from michi.lock.record import same_machine

    return owner is not None and same_machine(owner) and procs.is_descendant(owner.pid, owner.pid_ticks)


STOPPED = ", which is stopped (SIGSTOP, Ctrl-Z, a debugger)"


def _stopped(owner: Owner | None) -> bool:
    """Whether the holder is a process here that is stopped: no wait outlasts it until its lease ends."""
    from michi.lock import procs
    from michi.lock.record import same_machine

    if owner is None or not same_machine(owner) or not procs.alive(owner.pid, owner.pid_ticks):
        return False
    return procs.is_stopped(owner.pid)


def _clear_hint(owner: Owner | None) -> str:
    return OWN_HOLDER_HINT if _under(owner) else CLEAR_HINT


def resume_hint(pid: int) -> str:
    return (
        f"resume it (`kill -CONT {pid}`, or `fg` in its shell) or end it (`kill {pid}`), then retry; else it "
        "is taken over once its lease (lock_ttl) runs out"
    )


def holder_details(owner: Owner | None, now: float) -> dict[str, Any]:
    if owner is None:
        return {"holder": None}
    return {
        "holder": {
            "pid": owner.pid,
            "host": owner.host,
            "agent": owner.agent,
            "command": owner.command,
            "created": stamp(owner.created_ts),
            "expires": stamp(owner.expires_ts),
            "fence": owner.fence,
            "age": round(max(0.0, now - owner.created_ts), 3),
        }
    }


def describe(owner: Owner | None, now: float) -> str:
    if owner is None:
        return "a holder that has not published its record yet"
    who = f"PID {owner.pid}" + (f" on {owner.host}" if owner.host else "")
    if owner.agent:
        who += f" (agent {owner.agent})"
    return f"{who} running {owner.command!r} for {duration(now - owner.created_ts)}"


class LockTimeout(LockError):
    """The lock stayed held for the whole wait."""

    code = "lock_busy"

    @classmethod
    def waited(cls, owner: Owner | None, waited: float, now: float, path: str) -> LockTimeout:
        stopped = _stopped(owner)
        return cls(
            f"the repo lock is held by {describe(owner, now)}{STOPPED if stopped else ''}; gave up after "
            f"{waited:.1f}s",
            hint=resume_hint(owner.pid) if owner and stopped else _clear_hint(owner),
            waited=round(waited, 3),
            lock=path,
            checked_at=stamp(now),
            holder_stopped=stopped,
            **holder_details(owner, now),
        )

    @classmethod
    def queued(cls, first: int, waited: float, now: float, path: str) -> LockTimeout:
        """Nobody holds the lock, but waiters queued before us go first (arrival order, ADR 0003); a
        stopped waiter is passed over, so `first` runs."""
        return cls(
            f"the repo lock is free, but commands queued for it before this one go first (PID {first} is "
            f"next); gave up after {waited:.1f}s",
            hint="wait and retry (--wait SECONDS): waiters are served in the order they came",
            waited=round(waited, 3),
            lock=path,
            checked_at=stamp(now),
            holder=None,
            next_waiter=first,
        )

    @classmethod
    def guard_stuck(cls, holder: int | None, stopped: bool, waited: float, path: str) -> LockTimeout:
        """The guard flock (which every change to the lock takes for a moment) stayed held for the whole
        wait: by a process stopped inside it, which no lease can end."""
        return cls(
            f"the repo lock's guard is held by {guard_held_by(holder, stopped)} and was not let go; gave up "
            f"after {waited:.1f}s",
            hint=(
                f"resume it (`kill -CONT {holder}`) or end it (`kill {holder}`): until then nothing can take "
                "or release the lock"
                if holder is not None
                else "resume or end the michi process that is stopped: until then nothing can take or "
                "release the lock"
            ),
            waited=round(waited, 3),
            lock=path,
            guard_pid=holder,
            guard_stopped=stopped,
        )


def guard_held_by(holder: int | None, stopped: bool) -> str:
    """Who holds the guard, in words: "PID 7, which is stopped (SIGSTOP, a debugger),"."""
    who = f"PID {holder}" if holder is not None else "another process"
    return who + (", which is stopped (SIGSTOP, a debugger)," if stopped else "")


class LockContention(LockTimeout):
    """A one-try acquisition (`--wait 0`, `acquire(0)`) found the lock held: a timeout of zero."""


class LockLost(LockError):
    """The lock no longer carries our token (lease ran out and someone took it over): stop, push nothing."""

    code = "lock_lost"


class HoldLost(Conflict):
    """`lock release` / `renew` with a token whose lock was taken over or cleared by force: the script's
    work since then ran unguarded. Exit 4, not 75: retrying the release cannot help."""

    code = "lock_lost"
    also = True  # the guide lists `lock_lost` as LockLost's exit 75, this 4 beside it (catalogue.py)


class LockPathInvalid(UsageError):
    """`.michi.lock` is a file or a symlink, or cannot be created: never followed, never removed by us."""

    code = "lock_path_invalid"


class LockNotOwned(Conflict):
    """A release or renewal named a token that is not the lock's (exit 4: retrying will not help)."""

    code = "lock_not_owned"


class Terminated(Interrupted):
    """SIGTERM arrived while the lock was held: raised in the main thread so finally-blocks release it."""

    code = "terminated"


def terminated_by(signum: int, hint: str = "run the command again") -> Terminated:
    """What a command SIGTERM or SIGHUP ended says, wherever it was (ADR 0004)."""
    import signal

    return Terminated(f"terminated by {signal.Signals(signum).name}", hint=hint)


class CommandSignalled(MichiError):
    """`lock run`'s command was ended by a signal michi itself did not get: it ran, and the lock was held
    until none of it ran. Exit 128 + N as a shell gives; it was reported as michi's own Ctrl-C
    (`interrupted`, "nothing half-done was left"), or for SIGTERM not at all."""

    exit_code = ExitCode.INTERRUPTED  # for SIGINT; the instance carries 128 + N of its own signal
    code = "command_signalled"
    default_hint = "it ran until then, under the lock: check what it did before running it again"

    def __init__(self, signum: int, command: str) -> None:
        import signal

        try:
            name = signal.Signals(signum).name
        except ValueError:
            name = f"signal {signum}"
        super().__init__(
            f"the command {command!r} was ended by {name} (exit {128 + signum})",
            hint=self.default_hint,
            signal=name,
            returncode=128 + signum,
        )
        self.exit_code = 128 + signum  # type: ignore[assignment]  # a shell's status, not one of michi's


# The command is run as given, without a shell: a name on PATH or a path to an executable file.
RUN_HINT = (
    "check the command's name (it must be on PATH, or a path to an executable file); a shell command "
    "runs as `michi lock run -- sh -c '...'`"
)


class CommandNotFound(MichiError):
    """`lock run`'s command does not exist: exit 127, as a shell gives. Exit 2 read as the command's own
    exit 2, which a caller could not tell from "it never ran"."""

    exit_code = 127  # type: ignore[assignment]  # a shell's status, not one of michi's
    code = "command_failed"
    default_hint = RUN_HINT


class CommandNotExecutable(CommandNotFound):
    """`lock run`'s command exists but cannot be executed (no execute permission, a folder): exit 126."""

    exit_code = 126
    also = True  # the guide lists `command_failed` as 127, this 126 beside it (catalogue.py)


def not_runnable(argv: list[str], exc: OSError) -> CommandNotFound:
    """What `lock run` says of a command it could not start (it never ran; the lock was not kept)."""
    if isinstance(exc, FileNotFoundError):
        return CommandNotFound(f"command not found: {argv[0]!r} (exit 127)", command=argv[0], returncode=127)
    reason = exc.strerror or str(exc)
    return CommandNotExecutable(
        f"cannot run {argv[0]!r}: {reason} (exit 126)", command=argv[0], returncode=126
    )


class LockLive(Conflict):
    """`release --force` of a lock whose holder is provably alive, without `--yes`."""

    code = "lock_live"
