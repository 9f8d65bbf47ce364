"""What happened to a lock its holder no longer has: paused past its lease, taken over (by whom, why),
or cleared by force. The lock's event log records every takeover and forced release with a hash of
the token it ended, so the loser can be told, not just "not held" (ADR 0003)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from michi.durations import duration
from michi.lock import events
from michi.lock.record import Nested, Owner

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
        from_nested=nested_hashes(old.nested) if old else None,
        from_pid=old.pid if old else None,
        from_fence=old.fence if old else None,
        by_pid=by_pid,
        by_command=by_command,
        fence=fence,
        ended=ended or None,
    )


def nested_hashes(nested: tuple[Nested, ...]) -> list[str] | None:
    """The nested holds that end with their holder's, as the log names them (ADR 0003)."""
    return [token_hash(n.token) for n in nested if n.token] or None


def _names(event: dict[str, Any], field: str, wanted: str) -> bool:
    listed = event.get(field)
    return isinstance(listed, list) and wanted in listed


def _last(state_dir: Path, token: str) -> tuple[dict[str, Any], bool] | None:
    """The last event that ended the hold of `token`, and whether it ended it as a nested hold, ending
    the hold it was taken under."""
    wanted = token_hash(token)
    event: dict[str, Any]
    fields = {"takeover": ("from_token", "from_nested"), "release": ("token", "nested")}
    for event in reversed(events.read(state_dir)):
        own, nested = fields.get(str(event.get("kind")), ("", ""))
        if own and (event.get(own) == wanted or _names(event, nested, wanted)):
            return event, event.get(own) != wanted
    return None


def _ended(state_dir: Path, token: str) -> tuple[dict[str, Any], bool] | None:
    """`_last`, unless the hold was released by its own holder ("token", "inner")."""
    found = _last(state_dir, token)
    if found is None or (not found[1] and found[0].get("why") in ("token", "inner")):
        return None
    return found


def ending(state_dir: Path, token: str) -> dict[str, Any] | None:
    """The event that ended the hold of `token` by someone else (takeover, forced release, or the release
    of the hold it was nested in), if any."""
    found = _ended(state_dir, token)
    return None if found is None else found[0]


def released_inner(state_dir: Path, token: str, outer: str) -> bool:
    """Whether `token` was a nested hold of the hold of `outer`, released already by its holder."""
    found = _last(state_dir, token)
    return found is not None and found[0].get("why") == "inner" and found[0].get("outer") == token_hash(outer)


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
    found = _ended(state_dir, token)
    event = None if found is None else found[0]
    if found is not None and found[1]:
        parts.append("it was a nested hold, which ends with the hold it was taken under")
    if event is not None and event.get("kind") == "release" and event.get("why") == "token":
        parts.append(f"that hold's holder (PID {event.get('by_pid')}) released it")
    elif event is not None:
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
