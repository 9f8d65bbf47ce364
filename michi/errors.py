"""One error family: every failure michi expects carries its exit code, a stable code and a fix-it hint.

Only the CLI turns these into output and an exit status (see `michi.cli.main`). The exit codes are a
contract with agents and are documented in the README; never renumber them.
"""

from __future__ import annotations

from enum import IntEnum
from typing import Any


class ExitCode(IntEnum):
    OK = 0
    UNEXPECTED = 1
    USAGE = 2
    NOT_FOUND = 3
    CONFLICT = 4
    GIT = 5
    LOCK_BUSY = 75  # EX_TEMPFAIL from sysexits.h: try again later
    INTERRUPTED = 130  # 128 + SIGINT, as shells report it


class MichiError(Exception):
    """Base of every error michi expects. `code` is the stable snake_case name agents match on."""

    exit_code: ExitCode = ExitCode.UNEXPECTED
    code: str = "error"
    default_hint: str | None = None  # for a raise that names none: an agent is never left without one
    notes: list[str]  # lines for stderr that go with the error, e.g. which state a read answered from

    def __init__(self, message: str, *, hint: str | None = None, code: str | None = None, **details: Any):
        super().__init__(message)
        self.message = message
        self.hint = hint if hint is not None else self.default_hint
        if code is not None:
            self.code = code
        self.details = details
        self.notes = []

    def to_json(self) -> dict[str, Any]:
        body: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.hint:
            body["hint"] = self.hint
        body.update(self.details)
        return {"error": body}

    def one_line(self) -> str:
        return f"{self.message} ({self.hint})" if self.hint else self.message


class UsageError(MichiError):
    exit_code = ExitCode.USAGE
    code = "usage"


class NotARepository(UsageError):
    code = "not_a_repository"


class ConfigError(UsageError):
    code = "bad_config"


class NotFound(MichiError):
    exit_code = ExitCode.NOT_FOUND
    code = "not_found"


class Conflict(MichiError):
    exit_code = ExitCode.CONFLICT
    code = "conflict"


class GitFailed(MichiError):
    exit_code = ExitCode.GIT
    code = "git_failed"
    default_hint = "git's own message says why; run `git status` here, fix what it names, and retry"


class RemoteUnreachable(GitFailed):
    code = "remote_unreachable"
    connected = False  # True when git may have talked to the remote before failing (a push may have landed)


class RemoteRejected(GitFailed):
    code = "remote_rejected"


class RepoBusy(GitFailed):
    """The user's repository is mid-rebase, mid-merge or similar: michi will not touch it."""

    code = "repo_in_progress"


class StorageFailed(GitFailed):
    """The repository's disk refused a write of michi's own (its journal, a cache, a task file): full,
    over quota or read-only. Exit 5 as when git's own write fails there, never 1 (a bug)."""

    code = "storage_failed"


def storage_error(exc: BaseException) -> StorageFailed | None:
    """`exc` as `storage_failed` when it is the disk refusing a write; None for anything else."""
    import errno

    wanted = {errno.ENOSPC, errno.EROFS, getattr(errno, "EDQUOT", errno.ENOSPC)}
    if not isinstance(exc, OSError) or exc.errno not in wanted:
        return None
    where = f" {exc.filename}" if exc.filename else " to the repository"
    return StorageFailed(
        f"cannot write{where}: {exc.strerror or exc}",
        hint="free space on the repository's disk (or make it writable) and run `michi sync`, which "
        "finishes or reports anything left half-done; then check that the change is not there before "
        "running the command again",
    )


def unexpected(exc: BaseException) -> MichiError:
    """What a command that raised `exc`, no MichiError, reports: `storage_failed` for a disk that refused
    a write (no bug), else an unexpected error to report as one. The JSON contract holds either way."""
    return storage_error(exc) or MichiError(
        f"unexpected error: {type(exc).__name__}: {exc}", hint="please report this as a bug"
    )


class LockError(MichiError):
    exit_code = ExitCode.LOCK_BUSY
    code = "lock_error"


class ServerFailed(MichiError):
    """`michi server start|stop` could not (ADR 0016); the commands themselves never depend on it."""

    code = "server_failed"


class Interrupted(MichiError):
    exit_code = ExitCode.INTERRUPTED
    code = "interrupted"


class _BestEffort:
    """`contextlib.suppress(MichiError, OSError)` for a step that only saves work later, but never of an
    interruption: Ctrl-C, SIGTERM or SIGHUP (`Interrupted`, itself a MichiError) raised while the step
    ran must stop the command, not be swallowed by it."""

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: type[BaseException] | None, exc: object, tb: object) -> bool:
        return (
            kind is not None and issubclass(kind, (MichiError, OSError)) and not issubclass(kind, Interrupted)
        )


best_effort = _BestEffort()


class Relayed(MichiError):
    """An error raised in another process, given back as it was there (ADR 0017: the lock's holder
    applied this process's operation and it refused): same exit code, code, message, hint and details."""

    def __init__(self, exit_code: int, code: str, message: str, hint: str | None, details: dict[str, Any]):
        super().__init__(message, hint=hint, code=code, **details)
        self.exit_code = ExitCode(exit_code)

    @staticmethod
    def encode(exc: MichiError) -> dict[str, Any]:
        return {
            "exit": int(exc.exit_code),
            "code": exc.code,
            "message": exc.message,
            "hint": exc.hint,
            "details": exc.details,
            "notes": exc.notes,
        }

    @classmethod
    def decode(cls, data: dict[str, Any]) -> Relayed:
        exc = cls(
            data["exit"], data["code"], data["message"], data.get("hint"), dict(data.get("details") or {})
        )
        exc.notes = list(data.get("notes") or [])
        return exc
