"""`michi lock acquire|renew|release|status --remote`: the remote lock for scripts and people (ADR 0009).

A script's lock spans several michi processes: `acquire` leaves the record on the remote and prints its
token; `renew` and `release` find the record by that token and swap it, like any holder would.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import Any

from michi.durations import stamp
from michi.errors import UsageError
from michi.git import lockref
from michi.host import hostname
from michi.lock import remote_errors as errors
from michi.lock.record import process_start
from michi.lock.remote import OnWait, RemoteLock, View
from michi.lock.remote_record import REF, REMOTE_TOKEN_ENV
from michi.results import Result
from michi.session import Session


@dataclass(frozen=True)
class RemoteAcquired(Result):
    token: str
    fence: int
    expires: str | None
    remote: str
    ref: str

    def summary(self) -> str:
        return self.token  # alone, for `token=$(michi lock acquire --remote)`


@dataclass(frozen=True)
class RemoteRenewed(Result):
    fence: int
    expires: str | None
    remote: str

    def summary(self) -> str:
        return f"renewed the remote lock on {self.remote!r} until {self.expires} (fence {self.fence})"


@dataclass(frozen=True)
class RemoteReleased(Result):
    released: bool
    why: str  # token | stale | forced | free
    holder: dict[str, Any] | None
    fence: int | None
    remote: str

    def summary(self) -> str:
        if not self.released:
            return f"the remote lock on {self.remote!r} was not held"
        who = f"PID {self.holder['pid']} on {self.holder['host']}" if self.holder else "?"
        return f"released the remote lock on {self.remote!r} (held by {who}, fence {self.fence}; {self.why})"


@dataclass(frozen=True)
class RemoteStatus(Result):
    remote: str
    view: View
    checked: float
    # On this host only, advice for people: is the holder's PID running? (None: another host, or free.)
    # Never used to take the lock over: two machines or containers may share a host name.
    holder_running: bool | None = None

    def to_json(self) -> Any:
        record, view = self.view.record, self.view
        holder = errors.holder_details(record, view.unchanged_for)["holder"]
        left = (
            None if record is None or not view.held else round(max(0.0, record.ttl - view.unchanged_for), 3)
        )
        return {
            "remote": self.remote,
            "ref": REF,
            "commit": view.oid,
            "held": view.held,
            "stale": view.expired,
            "holder": holder,
            "age": holder["age"] if holder else None,
            "expires": holder["expires"] if holder else None,
            "time_left": left,
            "unchanged_for": round(view.unchanged_for, 3) if view.held else None,
            "fence": record.fence if record else None,
            "holder_running": self.holder_running,
            "checked_at": stamp(self.checked),
        }


def open_lock(
    session: Session,
    *,
    ttl: float | None,
    command: str,
    on_wait: OnWait | None = None,
    pid: int | None = None,
) -> RemoteLock:
    cfg = session.with_overrides(lock_ttl=ttl)
    if cfg.lock_ttl <= 0:
        raise UsageError(
            "the remote lock needs a lease: a holder on another machine that dies must expire",
            hint="pass --ttl SECONDS greater than 0 (or set lock_ttl)",
        )
    repo = session.repo
    name = cfg.remote
    if lockref.remote_url(repo.worktree, name) is None and not any(c in name for c in "/:"):
        raise UsageError(
            f"this repository has no remote named {name!r}",
            hint="add it (`git remote add NAME URL`), or name another with `remote` in .michi.toml or "
            "MICHI_REMOTE",
        )
    return RemoteLock(
        repo,
        remote=name,
        ttl=cfg.lock_ttl,
        command=command,
        agent=session.resolve_agent(),
        on_wait=on_wait,
        pid=pid,
    )


def acquire(
    session: Session, *, ttl: float | None, pid: int | None, wait: float | None, on_wait: OnWait | None
) -> RemoteAcquired:
    holder = os.getppid() if pid is None else pid
    lock = open_lock(
        session, ttl=ttl, command=f"lock acquire --remote (script PID {holder})", on_wait=on_wait, pid=holder
    )
    record = lock.acquire(session.with_overrides(lock_wait=wait).lock_wait)
    return RemoteAcquired(lock.detach(), record.fence, stamp(record.expires_ts), lock.remote, REF)


def _token(token: str | None) -> str | None:
    return token or os.environ.get(REMOTE_TOKEN_ENV) or None


def _held_with(lock: RemoteLock, token: str) -> View:
    view = lock.read()
    if not view.held or view.record is None or view.record.token != token:
        raise errors.not_owned(lock.remote, token, view.record)
    return view


def renew(session: Session, *, token: str | None, ttl: float | None) -> RemoteRenewed:
    token = _token(token)
    if token is None:
        raise UsageError("say which lock to renew", hint="pass --token TOKEN (printed by acquire --remote)")
    lock = open_lock(session, ttl=ttl, command="lock renew --remote")
    view = _held_with(lock, token)
    assert view.record is not None
    if ttl is None:  # keep the lease length the script asked for when it acquired
        lock.ttl = view.record.ttl
    lock.attach(view)
    lock.renew()
    assert lock.record is not None
    return RemoteRenewed(lock.record.fence, stamp(lock.record.expires_ts), lock.remote)


def release(session: Session, *, token: str | None, force: bool, yes: bool) -> RemoteReleased:
    token = _token(token)
    if token is None and not force:
        raise UsageError(
            "say which lock to release",
            hint="pass --token TOKEN (printed by acquire --remote), or --force if its holder is gone",
        )
    lock = open_lock(session, ttl=None, command="lock release --remote")
    try:
        view = lock.read()
    except errors.RemoteRecordCorrupt as exc:
        if not (force and yes):
            raise
        fence = lock.replace_corrupt(str(exc.details["oid"]))
        return RemoteReleased(True, "corrupt", None, fence, lock.remote)
    record = view.record
    if record is None or not record.held:  # idempotent, as the local lock's release
        return RemoteReleased(False, "free", None, record.fence if record else None, lock.remote)
    if token is not None and record.token == token:
        why = "token"
    elif force and (view.expired or yes):
        why = "stale" if view.expired else "forced"
    elif force:
        raise errors.live(lock.remote, record, view.unchanged_for)
    else:
        raise errors.not_owned(lock.remote, token or "", record)
    holder = errors.holder_details(record)["holder"]
    lock.attach(view)
    lock.release()
    return RemoteReleased(True, why, holder, record.fence, lock.remote)


def status(session: Session) -> RemoteStatus:
    lock = open_lock(session, ttl=None, command="lock status --remote")
    view = lock.read()
    running = None
    if view.held and view.record is not None and view.record.host == hostname():
        running = process_start(view.record.pid) is not None
    return RemoteStatus(lock.remote, view, time.time(), running)
