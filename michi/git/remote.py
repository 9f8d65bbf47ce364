"""Talking to the remote: fetch one branch, push one commit fast-forward only (ADR 0004)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from michi.errors import GitFailed
from michi.git.core import _exec, ref_oid
from michi.git.repo import Repo

# What git says when it never got to talk to the remote: nothing can have landed.
_NEVER_CONNECTED = (
    "does not appear to be a git repository",
    "could not resolve host",
    "connection refused",
    "connection timed out",
    "no route to host",
    "unable to access",
    "no such file or directory",
    "permission denied",
    "host key verification failed",
)


def _remote_failure(err: str, remote: str) -> GitFailed:
    from michi.errors import RemoteUnreachable

    first = next((line for line in err.splitlines() if line.strip()), err.strip())
    failure = RemoteUnreachable(
        f"cannot reach remote {remote!r}: {first}",
        hint="check the network and `git remote -v`; retry, or pass --offline to commit locally",
    )
    failure.connected = not any(marker in err.lower() for marker in _NEVER_CONNECTED)
    return failure


def fetch_branch(repo: Repo, remote: str, branch: str) -> str | None:
    """Update refs/remotes/<remote>/<branch> from the remote; None when the remote has no such branch."""
    tracking = f"refs/remotes/{remote}/{branch}"
    status, _out, err = _exec(
        repo,
        "fetch",
        "--quiet",
        "--no-tags",
        "--no-write-fetch-head",
        remote,
        f"+refs/heads/{branch}:{tracking}",
    )
    if status != 0:
        if "couldn't find remote ref" in err:
            return None
        raise _remote_failure(err, remote)
    return ref_oid(repo, tracking)


# Reasons a remote gives when a concurrent push won the race for the ref: contention, not refusal.


# Reasons a remote gives when a concurrent push won the race for the ref: contention, not refusal.
_REF_RACES = ("failed to update ref", "failed to lock", "incorrect old value provided", "cannot lock ref")


def _rejection_reasons(porcelain: str) -> list[str]:
    """The parenthesised reasons of `[remote rejected]` lines in `git push --porcelain` output, matched
    exactly, so a hook whose own message mentions a lock is not mistaken for contention."""
    reasons = []
    for line in porcelain.splitlines():
        if line.startswith("!") and "[remote rejected] (" in line:
            reason = line.split("[remote rejected] (", 1)[1].rsplit(")", 1)[0]
            reasons.append("cannot lock ref" if reason.startswith("cannot lock ref") else reason)
    return reasons


@dataclass(frozen=True)
class PushResult:
    ok: bool
    stale: bool  # rejected because the remote moved on: fetch and try again


def push(repo: Repo, remote: str, commit: str, branch: str, env: Mapping[str, str]) -> PushResult:
    """Fast-forward-only push of `commit` to the remote branch (the remote serializes machines)."""
    from michi.errors import RemoteRejected

    # Its own session: a Ctrl-C at the terminal must not kill git half-way through the push (ADR 0004).
    status, out, err = _exec(
        repo,
        "push",
        "--porcelain",
        "--quiet",
        remote,
        f"{commit}:refs/heads/{branch}",
        env=env,
        own_session=True,
    )
    if status == 0:
        return PushResult(ok=True, stale=False)
    text = f"{out}\n{err}"
    if "[rejected]" in text and ("non-fast-forward" in text or "fetch first" in text or "stale info" in text):
        return PushResult(ok=False, stale=True)
    if _rejection_reasons(str(out)) and all(r in _REF_RACES for r in _rejection_reasons(str(out))):
        return PushResult(ok=False, stale=True)  # another push held the remote's ref lock: retry
    if "[remote rejected]" in text or "[rejected]" in text:
        reason = next((ln.strip() for ln in text.splitlines() if "rejected]" in ln), err.strip())
        raise RemoteRejected(
            f"remote {remote!r} refused the push: {reason}",
            hint="the remote's hooks or branch protection refused michi's commit; ask its admin, then retry",
        )
    raise _remote_failure(err or str(out), remote)
