"""What happened to a lock its holder no longer has: paused past its lease, taken over (by whom, why),
or cleared by force. The lock's event log records every takeover and forced release with a hash of
the token it ended, so the loser can be told, not just "not held" (ADR 0003)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from michi.durations import duration
from michi.lock import events
from michi.lock.record import Owner

REASONS = {
    "expired": "its lease expired",
    "dead": "its holder was gone",
    "pid_reused": "its holder's PID belonged to another process",
    "rebooted": "it was taken before a reboot",
    "no_record": "it had no owner record",
    "corrupt": "its record was unreadable",
    "forced": "it was live and removed anyway (--yes)",
}


def token_hash(token: str) -> str:
    """What the event log keeps instead of a token (the token itself is a pass)."""
    import hashlib  # only on a takeover: hashlib loads OpenSSL (~5 ms)

    return hashlib.sha256(token.encode()).hexdigest()[:16]


def log_takeover(
    state_dir: Path,
    reason: str,
    old: Owner | None,
    by_pid: int,
    by_command: str,
    fence: int,
    ended: list[int],
) -> None:
    """Record who replaced which hold, why, and what of a dead holder's command it had to end."""
    events.append(
        state_dir,
        "takeover",
        reason=reason,
        from_token=token_hash(old.token) if old else None,
        from_pid=old.pid if old else None,
        from_fence=old.fence if old else None,
        by_pid=by_pid,
        by_command=by_command,
        fence=fence,
        ended=ended or None,
    )


def ending(state_dir: Path, token: str) -> dict[str, Any] | None:
    """The event that ended the hold of `token` by someone else (takeover or forced release), if any."""
    wanted = token_hash(token)
    event: dict[str, Any]
    for event in reversed(events.read(state_dir)):
        if event.get("kind") == "takeover" and event.get("from_token") == wanted:
            return event
        if event.get("kind") == "release" and event.get("token") == wanted:
            return None if event.get("why") == "token" else event  # "token": released by its holder
    return None


def explain(
    state_dir: Path, token: str, fence: int | None, now_held: Owner | None, paused: float | None, ttl: float
) -> tuple[str, dict[str, Any]]:
    """One sentence on what happened, and the details for --json."""
    parts = []
    details: dict[str, Any] = {"fence": fence}
    if paused is not None and ttl and paused > ttl:
        parts.append(
            f"this process was paused or starved for {duration(paused)} (SIGSTOP, suspend, a debugger), "
            f"longer than its {duration(ttl)} lease"
        )
        details["paused"] = round(paused, 3)
    event = ending(state_dir, token)
    if event is not None:
        cause = str(event.get("reason") or event.get("why") or "").removeprefix("stale:")
        why = REASONS.get(cause, cause)
        if event.get("kind") == "takeover":
            by = f"PID {event.get('by_pid')} ({event.get('by_command')!r}, fence {event.get('fence')})"
            parts.append(f"{why}, and {by} took it over")
            details.update(taken_over_by=event.get("by_pid"), reason=event.get("reason"))
            ended = event.get("ended")
            if isinstance(ended, list) and ended:
                pids = ", ".join(str(p) for p in ended)
                parts.append(f"it ended what this command ran, unguarded since (PID {pids}), before its own")
                details["ended"] = ended
        else:
            parts.append(f"`michi lock release --force` (by PID {event.get('by_pid')}) removed it: {why}")
            details.update(reason=cause)
    if now_held is not None and now_held.token != token:
        parts.append(f"it is now held by PID {now_held.pid} ({now_held.command!r}, fence {now_held.fence})")
        details["holder_fence"] = now_held.fence
    elif now_held is None:
        parts.append("it is now free")
    shown = f" (fence {fence})" if fence else ""
    return f"lost the repo lock{shown}: " + "; ".join(parts), details
