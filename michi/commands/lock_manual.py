"""`michi lock acquire / release / renew`: the lock for shell scripts spanning several commands (seed 002).

The holder recorded is the script that called michi, found from michi's parent past subshells and
wrappers (`$(...)`, pipelines, `||`, `timeout`), unless `--pid` names another, so the lock is provably
stale once the script and those subshells are gone; the token printed is what releases it.

Under an inherited token (`lock run`'s command, a script run by a script holding the lock) `acquire`
works under that hold: it takes a nested hold with a token of its own, whose release ends that nested
hold only (`admin.release`), never the outer one (ADR 0003).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass

from michi.durations import stamp
from michi.errors import UsageError
from michi.lock import TOKEN_ENV, Owner, RepoLock, admin, procs
from michi.lock.record import FENCE_ENV
from michi.results import Result
from michi.session import Session


@dataclass(frozen=True)
class Acquired(Result):
    token: str
    pid: int
    expires: str | None
    lock: str
    fence: int | None
    export: bool = False  # print shell `export` lines instead of the bare token
    inner: bool = False  # a nested hold, under an inherited token: its own token ends it, not the outer

    def summary(self) -> str:
        if self.export:
            return f"export {TOKEN_ENV}={self.token} {FENCE_ENV}={self.fence or ''}"
        return self.token

    def to_json(self) -> dict[str, object]:
        return {
            "token": self.token,
            "pid": self.pid,
            "expires": self.expires,
            "lock": self.lock,
            "fence": self.fence,
            "inner": self.inner,
        }


@dataclass(frozen=True)
class Released(Result):
    released: bool
    why: str  # token | stale:<reason> | forced | free | inner
    holder_pid: int | None
    lock: str

    def summary(self) -> str:
        if self.why == "inner":
            return (
                f"ended this nested hold; the repo lock stays held by PID {self.holder_pid}, which "
                "releases it"
            )
        if not self.released:
            return "the repo lock was not held"
        holder = f"held by PID {self.holder_pid}" if self.holder_pid else "no readable owner record"
        return f"released the repo lock ({holder}; {self.why})"


@dataclass(frozen=True)
class Renewed(Result):
    expires: str | None
    lock: str

    def summary(self) -> str:
        return f"renewed the repo lock until {self.expires or 'released (no expiry)'}"


def acquire(
    session: Session,
    *,
    ttl: float | None,
    pid: int | None,
    wait: float | None,
    export: bool = False,
    on_wait: Callable[[Owner | None, float], None] | None = None,
) -> Acquired:
    script, forks = procs.script_chain(os.getppid())
    by = (script, procs.start_ticks(script))
    holder, forks = (script, forks) if pid is None else (pid, [])
    ticks = by[1] if pid is None else procs.start_ticks(holder)
    if holder <= 0 or ticks is None:
        raise UsageError(f"no process with PID {holder}", hint="--pid must name a live process")
    cfg = session.with_overrides(lock_wait=wait, lock_ttl=ttl)
    lock = RepoLock(
        session.repo,
        ttl=cfg.lock_ttl,
        command=f"lock acquire (script PID {holder})",
        agent=session.resolve_agent(),
        pid=holder,
        on_wait=on_wait,
        forks=tuple(forks),
        by=by,
    )
    lock.acquire(cfg.lock_wait)
    record, fence, inner = lock.record, lock.fence, lock.joined
    token = lock.detach()
    if inner:
        record, token = admin.nest(session.repo, token=token, holder=(holder, ticks), by=by)
    lock_dir = str(session.repo.lock_dir)
    expires = stamp(record.expires_ts) if record else None
    return Acquired(token, holder, expires, lock_dir, fence, export, inner)


def _token(token: str | None) -> str | None:
    return token or os.environ.get(TOKEN_ENV) or None


def _caller() -> tuple[int, int | None]:
    """Who releases or renews, named as `acquire` names a holder: a nested holder finds its own entry."""
    holder = procs.script_holder(os.getppid())
    return holder, procs.start_ticks(holder)


def release(session: Session, *, token: str | None, force: bool, yes: bool) -> Released:
    token = _token(token)
    if token is None and not force:
        raise UsageError(
            "say which lock to release", hint="pass --token TOKEN (printed by acquire), or --force if stale"
        )
    owner, why = admin.release(session.repo, token=token, force=force, yes=yes, caller=_caller())
    return Released(why != "free", why, owner.pid if owner else None, str(session.repo.lock_dir))


def renew(session: Session, *, token: str | None, ttl: float | None) -> Renewed:
    token = _token(token)
    if token is None:
        raise UsageError("say which lock to renew", hint="pass --token TOKEN (printed by acquire)")
    cfg = session.with_overrides(lock_ttl=ttl)
    owner = admin.renew(session.repo, token=token, ttl=cfg.lock_ttl, caller=_caller())
    return Renewed(stamp(owner.expires_ts), str(session.repo.lock_dir))
