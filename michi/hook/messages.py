"""What the hook says: one refusal per cause, each naming who or what blocks and what to do.

Refusals are `MichiError`s with stable codes, so `michi --json hook run` reports them like any error;
git shows the hook's stderr to whoever ran `git commit`.
"""

from __future__ import annotations

from collections.abc import Sequence

from michi.errors import LockError, UsageError
from michi.lock.errors import describe, holder_details
from michi.lock.record import Owner

CLEAR_HINT = (
    "inspect it with `michi lock status` (or read .michi.lock/owner.json); clear it with "
    "`michi lock release --force --yes`, or remove the .michi.lock/ folder by hand once no michi "
    "process is running"
)


class LockHeld(LockError):
    """Another process holds a live lock: its commit must not be swept into ours."""

    code = "lock_busy"  # the same code agents already match for a busy lock


class LockUnreadable(LockError):
    """The lock exists but its record cannot be read: nobody can tell whether its holder is alive."""

    code = "lock_corrupt"


class HandEdit(UsageError):
    """Task files must change through michi (record 75), unless the user opted out."""

    code = "hand_edit"


def lock_held(owner: Owner | None, now: float, token_given: bool, orphans: tuple[int, ...] = ()) -> LockHeld:
    who = describe(owner, now) if owner else "a process that is taking it right now"
    if orphans:  # its michi died, but the command it ran under the lock still runs (ADR 0003)
        who += f"; that process is gone but its command still runs as PID {', '.join(map(str, orphans))}"
    hint = (
        "wait for it to finish and commit again (`michi lock status` shows it); to commit as part of a "
        "locked sequence, run `michi lock run -- git commit ...`, or commit from the script that holds the "
        "lock (its commits and its children's pass)"
    )
    if token_given:
        hint = f"MICHI_LOCK_TOKEN is set but is not this lock's token (released or taken over); {hint}"
    message = f"commit refused: the repo lock is held by another process ({who})"
    # The same holder fields as the lock's own lock_busy error, and never the token: it is the pass.
    return LockHeld(message, hint=hint, **holder_details(owner, now))


# A file or symlink in the lock's place is not michi's to remove: `michi lock release --force` refuses it too.
NOT_A_FOLDER_HINT = (
    "michi will not follow or remove it: if it is not yours to keep, remove it by hand (rm .michi.lock) "
    "and commit again"
)


def unreadable(reason: str, hint: str = CLEAR_HINT) -> LockUnreadable:
    return LockUnreadable(f"commit refused: the repo lock is unreadable ({reason})", hint=hint)


STALE_REASONS = {
    "expired": "its lease expired",
    "dead": "its process is gone",
    "pid_reused": "its PID now belongs to another process",
    "rebooted": "it was taken before the last reboot",
    "no_record": "it has no owner record",
}


def stale(owner: Owner | None, reason: str, now: float) -> str:
    who = f" ({describe(owner, now)})" if owner else ""
    why = STALE_REASONS.get(reason, reason)
    return (
        f"ignoring a stale repo lock{who}: {why}; the next michi command takes it over "
        "(`michi lock status` shows it)"
    )


def hand_edit(paths: Sequence[str]) -> HandEdit:
    shown = ", ".join(paths[:3]) + (f" and {len(paths) - 3} more" if len(paths) > 3 else "")
    return HandEdit(
        f"commit refused: it changes task files by hand ({shown})",
        hint="change tasks with `michi task ...` and unstage these (`git restore --staged PATH`); to allow "
        "hand edits set allow_hand_edits = true in .michi.toml or MICHI_ALLOW_HAND_EDITS=1",
        paths=list(paths),
    )


class UnsyncedPush(UsageError):
    """A push would publish michi's offline commits, whose task ids are provisional (ADR 0007)."""

    code = "offline_unsynced"


def unsynced_push(count: int) -> UnsyncedPush:
    return UnsyncedPush(
        f"push refused: it carries {count} change(s) michi made offline, whose task ids are provisional; "
        "run `michi sync` first, then push",
        hint="`michi sync` lands them with ids taken on the remote and leaves your own commits to push",
        carried=count,
    )
