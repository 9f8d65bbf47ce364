"""`michi lock ... --remote`: the remote lock's side of the lock verbs (ADR 0009). `lock_cli` parses the
flags and hands over here; this module calls the commands and registers how their results look."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator

from michi.cli import render
from michi.cli.progress import QUIET_FOR, spinner
from michi.commands import lock_remote
from michi.commands.lock_remote import RemoteStatus
from michi.durations import as_given
from michi.lock.remote import OnWait
from michi.lock.remote_record import RemoteRecord
from michi.results import Result
from michi.session import Session


def describe_wait(remote: str, holder: RemoteRecord | None, waited: float) -> str:
    head = f"waiting for the remote lock on {remote!r} ({waited:.0f}s)"
    if holder is None:
        return head
    who = f"PID {holder.pid} on {holder.host}" + (f", agent {holder.agent}" if holder.agent else "")
    held_for = max(0.0, time.time() - holder.created_ts)
    return f"{head}: {who} is running {holder.command!r} for {held_for:.0f}s (fence {holder.fence})"


@contextlib.contextmanager
def remote_waiter(session: Session) -> Iterator[OnWait | None]:
    with spinner(session) as update:
        if update is None:
            yield None
            return
        shown, remote = update, session.config.remote

        def on_wait(holder: RemoteRecord | None, waited: float) -> None:
            if waited >= QUIET_FOR:
                shown(describe_wait(remote, holder, waited))

        yield on_wait


def run(session: Session, command: list[str], *, ttl: float | None, wait: float | None) -> int:
    from michi.commands.lock_remote_run import run as run_command

    with remote_waiter(session) as on_wait:
        result = run_command(session, command, ttl=ttl, wait=wait, on_wait=on_wait)
    return result.exit_code


def acquire(session: Session, *, ttl: float | None, pid: int | None, wait: float | None) -> Result:
    with remote_waiter(session) as on_wait:
        return lock_remote.acquire(session, ttl=ttl, pid=pid, wait=wait, on_wait=on_wait)


@render.human.register(RemoteStatus)
def _status(result: RemoteStatus) -> str:
    data = result.to_json()
    where = f"{data['remote']} {data['ref']}"
    if not data["held"]:
        fence = "" if data["fence"] is None else f" (last fence {data['fence']})"
        return f"the remote lock on {where} is free{fence}"
    holder = data["holder"]
    lines = [
        f"lock     {where} = {str(data['commit'])[:12]}",
        f"holder   PID {holder['pid']} on {holder['host']}, agent {holder['agent'] or '-'}",
        f"command  {holder['command']}",
        f"age      {holder['age']:.1f}s (by the holder's clock)",
        f"fence    {data['fence']}",
        f"renewed  at least {data['unchanged_for']:.1f}s ago (unchanged for that long as seen from here)",
        f"expires  {holder['expires']} by the holder's clock;"
        f" stale here in {data['time_left']:.1f}s unless renewed",
    ]
    if data["holder_running"] is False:
        lines.append(
            f"         PID {holder['pid']} is not running on this host: the lock is taken over once unrenewed"
            " for its TTL, or now with `michi lock release --remote --force --yes`"
        )
    if data["stale"]:
        lines.append(
            f"state    STALE: not renewed for its TTL ({as_given(holder['ttl'])}s); "
            "the next acquire takes it over"
        )
    else:
        lines.append("state    live")
    return "\n".join(lines)
