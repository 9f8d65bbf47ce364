"""Talking to the remote: fetch one branch, push one commit fast-forward only (ADR 0004). Each call is
ended, with every process it started, once it has run `Repo.network_timeout` seconds: a remote that
accepts a connection and then never answers must not keep the repo lock forever."""

from __future__ import annotations

import random
import re
import signal
import subprocess
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from michi.errors import GitFailed
from michi.git.core import lock_held, ref_oid
from michi.git.plain import NeverStarted, OnStart, run_ended
from michi.git.repo import Repo

# What git says when it never got to talk to the remote: nothing can have landed.
_NEVER_CONNECTED = (
    "does not appear to be a git repository",
    "invalid gitfile format",  # a remote path that is a plain file
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
    # A line the remote's side sent (`remote: ...`, its hooks' words) proves git talked to it, whatever
    # words it holds: a server that died after it moved the branch must not read as "never reached".
    spoke = any(line.startswith("remote:") for line in err.splitlines())
    failure.connected = spoke or not any(marker in err.lower() for marker in _NEVER_CONNECTED)
    return failure


def _timed_out(repo: Repo, remote: str) -> GitFailed:
    from michi.errors import RemoteUnreachable

    failure = RemoteUnreachable(
        f"remote {remote!r} did not answer within {repo.network_timeout:g} s; michi ended git",
        hint="check the remote and the network (a stuck server or connection), then retry; a slow link "
        "needs a larger remote_timeout (MICHI_REMOTE_TIMEOUT)",
    )
    failure.connected = True  # it may have taken a push before it stopped answering
    return failure


def _shown_url(url: str) -> str:
    """`url` without the user and password a `scheme://user:secret@host/...` URL may carry."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        return url
    authority, slash, path = rest.partition("/")
    return f"{scheme}://{authority.rpartition('@')[2]}{slash}{path}"


def one_push_url(repo: Repo, remote: str) -> None:
    """Refuse (exit 2, `bad_config`) a remote with more than one push URL: `remote.<name>.pushurl`, else
    `remote.<name>.url`, set more than once (a mirror). git pushes to each in turn, so one URL taking
    michi's commit and another refusing it, or lagging ("stale info"), left the change on the remote
    michi fetches from while michi said it had not landed: run again, it landed twice (ADR 0004). One
    push URL other than the fetch URL (fetch over https, push over ssh) is one repository, and fine.
    Read from the settings michi reads anyway (`core.config_values`): no git process of its own."""
    from michi.git.core import config_values

    config = config_values(repo)
    key = f"remote.{remote}.pushurl" if config.get(f"remote.{remote}.pushurl") else f"remote.{remote}.url"
    refuse_mirrors(remote, key, [u for u in config.get(key, "").split("\n") if u])


def refuse_mirrors(remote: str, key: str, urls: list[str]) -> None:
    """`one_push_url`'s refusal, given the push URLs (`key`: the setting they came from)."""
    if len(urls) < 2:
        return
    from michi.errors import ConfigError

    push = " --push" if key.endswith("pushurl") else ""
    shown = [_shown_url(u) for u in urls]
    raise ConfigError(
        f"remote {remote!r} has {len(urls)} push URLs ({key}: {', '.join(shown)}); michi pushes to one "
        "repository only: one refusing or lagging behind would leave a change half-made",
        hint=f"keep one (`git remote set-url{push} --delete {remote} URL` for each other) and mirror from "
        "that repository (a hook), or make the mirror a remote of its own",
        remote=remote,
        push_urls=shown,
    )


def pushes_here(repo: Repo, remote: str) -> bool:
    """Does a push to `remote` run its receiving side on this machine, as git's own child (a path or a
    `file://` URL, after `insteadOf`)? Then a push michi ended ended there too, and what it did not land it
    never will; a server's side (ssh, git://, https) goes on by itself. False when unsure."""
    status, out, _err = repo.execute(["remote", "get-url", "--push", remote])
    url = out.decode("utf-8", "surrogateescape").strip() if status == 0 else ""
    if not url or "\n" in url:
        return False
    if url.startswith("file://"):
        return True
    if "://" in url:
        return False
    colon, slash = url.find(":"), url.find("/")
    return colon < 0 or 0 <= slash < colon  # `host:path` is ssh; a colon after a slash is in a path


def _network(
    repo: Repo,
    args: list[str],
    remote: str,
    env: Mapping[str, str] | None = None,
    on_start: OnStart | None = None,
    outlives_us: bool = False,
    yielding: bool = False,
    named: Callable[[int], None] | None = None,
) -> tuple[int, str, str]:
    """`git <args>` that talks to `remote`: (status, stdout, stderr), ended with what it started once it
    ran `repo.network_timeout` seconds (`plain.run_ended`). `outlives_us`: a push is not ended when
    this process is interrupted (ADR 0004: it lands or not, and the journal knows); a fetch is."""
    try:
        status, out, err = run_ended(
            ["git", *args],
            cwd=repo.working_dir,
            env=repo.env(env),
            timeout=repo.network_timeout,
            on_start=on_start,
            outlives_us=outlives_us,
            yielding=yielding,
            named=named,
        )
    except subprocess.TimeoutExpired:
        raise _timed_out(repo, remote) from None
    except NeverStarted:
        from michi.errors import RemoteUnreachable

        raise RemoteUnreachable(  # not `connected`: nothing was sent, the caller may simply retry
            f"git was ended before it started talking to remote {remote!r}; nothing was sent",
            hint="retry the command; if this keeps happening, see which process ends michi's git",
        ) from None
    return status, out.decode("utf-8", "replace"), err.decode("utf-8", "replace")


# git's words when another process of this clone moved the remote-tracking ref between this fetch's read
# of it and its write (made, deleted, or still holds its lock): a read's fetch (run without the repo
# lock), a user's `git fetch`, or the fetch of a SIGKILLed holder (in its own session, so it outlives
# michi). The other fetch brought the objects: try again.
_TRACKING_RACED = re.compile(
    r"cannot lock ref '[^']*': (?:is at [0-9a-f]+ but expected [0-9a-f]+|reference already exists"
    r"|reference is missing but expected [0-9a-f]+|Unable to create '[^']*': File exists)"
)
_FETCH_TRIES = 5


def fetch_branch(repo: Repo, remote: str, branch: str) -> str | None:
    """Update refs/remotes/<remote>/<branch> from the remote; None when the remote has no such branch.
    Fetches racing for the ref in this clone are tried again, a few times (`_TRACKING_RACED`)."""
    tracking = f"refs/remotes/{remote}/{branch}"
    args = [
        "fetch",
        "--quiet",
        "--no-tags",
        "--no-write-fetch-head",
        remote,
        f"+refs/heads/{branch}:{tracking}",
    ]
    raced = ""
    for attempt in range(1, _FETCH_TRIES + 1):
        status, _out, err = _network(repo, args, remote)
        if status == 0:
            return ref_oid(repo, tracking)
        if "couldn't find remote ref" in err:
            return None
        found = _TRACKING_RACED.search(err)
        if found is None:
            raise lock_held(err) or _remote_failure(err, remote)
        raced = found.group(0)
        if attempt < _FETCH_TRIES:
            time.sleep(random.uniform(0.005, 0.02) * attempt)  # out of step with the other fetch
    raise lock_held(err) or GitFailed(  # a lock file left behind is named as such, with what to do
        f"git cannot update {tracking}: other git processes in this clone kept moving it ({raced}, "
        f"{_FETCH_TRIES} tries)",
        code="git_lock_held",
        hint="retry; if it keeps happening, stop whatever fetches this clone in a loop",
    )


def prefetch_branch(repo: Repo, remote: str, branch: str) -> str | None:
    """Fetch the remote branch's objects into michi's own ref, refs/michi/fetched/<remote>/<branch>, and
    return the tip seen; None when that failed or found no branch. Run without the repo lock (ADR 0004),
    so it must never write the remote-tracking ref: a forced update racing the holder's push could set it
    back to a tip older than the one the push just landed. `--refmap=` keeps git from updating it on the
    side from the configured refspec, as it otherwise does for a branch named on the command line. Two
    prefetches racing for michi's ref can set it back too: the tip is only a guess to build on, which the
    fast-forward-only push checks."""
    ref = f"refs/michi/fetched/{remote}/{branch}"
    args = ["fetch", "--quiet", "--no-tags", "--no-write-fetch-head", "--refmap="]
    args += [remote, f"+refs/heads/{branch}:{ref}"]
    try:
        # No lock waits for it: a low CPU priority, so that on shared cores it slows another clone's
        # holder less (ADR 0004).
        status, _out, _err = _network(repo, args, remote, yielding=True)
    except GitFailed:
        return None  # it ran out of time: the round under the lock fetches (and says why it cannot)
    return ref_oid(repo, ref) if status == 0 else None


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


def _reports(porcelain: str) -> tuple[int, bool]:
    """(how many URLs `git push --porcelain --quiet` reported on, whether one of them took every ref).
    Each URL's report ends with `Done`; a URL that refused something names itself (`To <url>`) and the
    refs first, and one that took every ref, quiet, says nothing else."""
    reached, took_all, named = 0, False, False
    for line in porcelain.splitlines():
        if line.startswith("To "):
            named = True
        elif line == "Done":
            reached, took_all, named = reached + 1, took_all or not named, False
    return reached, took_all


@dataclass(frozen=True)
class PushResult:
    ok: bool
    stale: bool  # rejected because the remote moved on: fetch and try again


def _run_push(
    repo: Repo,
    args: list[str],
    env: Mapping[str, str],
    remote: str,
    named: Callable[[int], None] | None,
    on_start: OnStart | None,
) -> tuple[int, str, str]:
    """`git push` in its own session (a terminal Ctrl-C must not kill it half-way, ADR 0004). It outlives
    a SIGKILLed michi, so the next holder must be able to find it (see michi.workflow.orphans): it starts
    only once `named(pid)` wrote its pid down, then `on_start(pid)` runs beside it (`plain.run_ended`).
    Ended when it runs out of time (`_network`)."""
    return _network(repo, args, remote, env, on_start, outlives_us=True, named=named)


def push(
    repo: Repo,
    remote: str,
    commit: str,
    branch: str,
    env: Mapping[str, str],
    on_start: OnStart | None = None,
    thin: bool = True,
    release: tuple[str, str] | None = None,
    named: Callable[[int], None] | None = None,
    *,
    built_on: str | None,
    verify: bool = False,
) -> PushResult:
    """Push of `commit` to the remote branch, leased on `built_on` (ADR 0004): it lands only while the
    remote branch is exactly the tip the commit was built on ("" or None: only while it has no such
    branch), so a remote set back to an older tip (a force-push) refuses it as stale rather than taking
    back what it dropped, as a fast-forward would. `commit` descends from `built_on`, so the update is a
    fast-forward whenever the lease holds. Local pre-push hooks run only with `verify` (a push of the
    user's own commits, `--push-all`): michi's commits hold task files alone, and a hook of the user's
    (tests, linters) has no say over them, nor a place inside the lock (ADR 0005).
    `thin=False` for a commit adding thousands of files: a thin pack looks each new path up in the
    remote's trees one entry at a time, which took 12 s of a 10,000-task import chunk (ADR 0015).
    `release` (ref, oid): the same push deletes that remote ref, only if it still names oid, and the
    branch moves only if the deletion happens too (`--atomic`): a clone's turn (ADR 0004) ends with the
    push that used it. A lost lease refuses the push as stale. `named(pid)` runs before git may start
    (it writes the pid down; if it raises, nothing is pushed), `on_start(pid)` beside the push."""
    from michi.errors import RemoteRejected

    # A large commit also skips the delta search: its blobs come from one fresh pack of small task files,
    # sent as they are stored; the remote's next gc deltifies them (ADR 0015).
    bulk = [] if thin else ["-c", "pack.window=0"]
    args = [*bulk, "push", "--porcelain", "--quiet", *([] if thin else ["--no-thin"])]
    if not verify:
        args.append("--no-verify")
    args.append(f"--force-with-lease=refs/heads/{branch}:{built_on or ''}")
    if release is not None:
        args += ["--atomic", f"--force-with-lease={release[0]}:{release[1]}"]
    args += [remote, f"{commit}:refs/heads/{branch}", *([f":{release[0]}"] if release else [])]
    status, out, err = _run_push(repo, args, env, remote, named, on_start)
    if status == 0:
        return PushResult(ok=True, stale=False)
    text = f"{out}\n{err}"
    reached, took_all = _reports(out)
    if reached > 1 or took_all:
        # Several push URLs (refused before the lock, `one_push_url`; a config changed meanwhile), or git
        # failing after the remote took the push: it landed somewhere, so neither "stale" nor "refused"
        # is the answer (read so, it was applied again, or "run it again" made it twice). The caller
        # asks the remote it fetches from (ADR 0004).
        from michi.errors import RemoteUnreachable

        what = (
            f"went to {reached} URLs and not every one took it"
            if reached > 1
            else "was taken, then git failed"
        )
        failure = RemoteUnreachable(
            f"the push to remote {remote!r} {what}: "
            + "; ".join(ln.strip() for ln in err.splitlines() if ln.strip())[:300],
            hint="keep one push URL (`git remote -v`), then run `michi sync`" if reached > 1 else None,
        )
        failure.connected = True
        raise failure
    if "[rejected]" in text and ("non-fast-forward" in text or "fetch first" in text or "stale info" in text):
        return PushResult(ok=False, stale=True)
    # Atomic, the remote gives every ref a race lost by one (or at the transaction's commit) as "atomic
    # push failure" / "atomic transaction failed".
    reasons = _rejection_reasons(out)
    if reasons and all(r in _REF_RACES or (release and r.startswith("atomic")) for r in reasons):
        return PushResult(ok=False, stale=True)  # another push held the remote's ref lock: retry
    if "[remote rejected]" in text or "[rejected]" in text:
        reason = next((ln.strip() for ln in text.splitlines() if "rejected]" in ln), err.strip())
        said = " ".join(
            ln[7:].strip() for ln in err.splitlines() if ln.startswith("remote:") and ln[7:].strip()
        )
        raise RemoteRejected(
            f"remote {remote!r} refused the push: {reason}" + (f"; it said: {said[:300]}" if said else ""),
            hint="the remote's hooks or branch protection refused michi's commit; ask its admin, then retry",
        )
    if status < 0 and not err.strip():  # ended by a signal (a holder that took over stops a push)
        err = f"git push was ended by {signal.Signals(-status).name} before it finished"
    raise _remote_failure(err or out, remote)
