"""The sync part of `michi status`: the last contact with the remote, how far the local task branch is from
the remote one, and the work the journal still holds (offline commits not yet pushed, ADR 0004)."""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable
from typing import Any

from michi.atomic import read_regular
from michi.session import Session
from michi.tasks.model import tw_date

JOURNAL = "journal.json"
ASKED = "status-tips.json"  # in michi's state folder: what git said of the last two tips status saw


class _Asked:
    """What git answered about the local and the remote-tracking tip (how far apart, the michi commits
    between, which of those the remote dropped), kept for the next status: commits never change, so the
    answers hold while neither tip moves, and a monitor's poll or `watch`'s refresh asks git nothing
    (ADR 0013). A cache michi can always make again: unreadable, or for other tips, it is asked anew."""

    def __init__(self, session: Session, local: str, tracking: str) -> None:
        self.path = session.repo.state_dir / ASKED
        self.tips = [local, tracking]
        try:
            data = json.loads(read_regular(self.path))
        except (OSError, ValueError, RecursionError):
            data = None
        self.data: dict[str, Any] = data if isinstance(data, dict) and data.get("tips") == self.tips else {}

    def get(self, name: str, ask: Callable[[], Any], valid: Callable[[Any], bool]) -> Any:
        """The answer kept under `name`, else `ask()`'s, kept."""
        if name in self.data and valid(self.data[name]):
            return self.data[name]
        self.put(name, value := ask())
        return value

    def put(self, name: str, value: Any) -> None:
        self.data[name] = value
        from michi.atomic import write_cache

        with contextlib.suppress(OSError):  # not kept: the next status asks again
            write_cache(self.path, json.dumps({**self.data, "tips": self.tips}).encode())


def _strings(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def _counts(value: Any) -> bool:
    return isinstance(value, list) and len(value) == 2 and all(type(v) is int and v >= 0 for v in value)


def _commits(value: Any) -> bool:
    """[commit, subject, Michi-Txn, Michi-Agent] each."""
    return isinstance(value, list) and all(
        isinstance(c, list)
        and len(c) == 4
        and isinstance(c[0], str)
        and isinstance(c[1], str)
        and all(v is None or isinstance(v, str) for v in c[2:])
        for c in value
    )


def _times(session: Session, sync: dict[str, Any] | None, commits: list[str]) -> dict[str, float]:
    """Committer time of each of `commits` (one git process each), kept with the tips' other answers."""
    from michi.git.trail import commit_times

    local, tip = (sync or {}).get("local"), (sync or {}).get("remote_tip")
    if not local or not tip or local == tip:
        return commit_times(session.repo.worktree, commits)
    asked = _Asked(session, str(local), str(tip))
    known = asked.data.get("times")
    if not isinstance(known, dict) or not all(type(t) in (int, float) for t in known.values()):
        known = {}
    missing = [c for c in commits if c not in known]
    if missing:
        known = {**known, **commit_times(session.repo.worktree, missing)}
        asked.put("times", known)
    return {c: float(known[c]) for c in commits if c in known}


def _target(session: Session, stamp: Any) -> tuple[str, str | None]:
    """(branch, remote): from the read's stamp when it has one, else resolved through git (rare: config
    includes or the reftable backend, where the read path cannot vouch by file reads)."""
    if stamp is not None:
        return str(stamp.branch), stamp.remote
    from michi import git
    from michi.workflow.target import resolve

    target = resolve(git.open_repo(session.repo.worktree), session.config)
    return target.branch, target.remote


def _oid(session: Session, ref: str) -> str | None:
    from michi.git.files import read_ref

    try:
        return read_ref(session.repo.common_dir, ref)
    except (OSError, ValueError):  # not a loose or packed ref git would read: ask git
        from michi.errors import GitFailed
        from michi.git.plain import quick

        try:
            return quick(session.repo.worktree, "rev-parse", "--verify", "--quiet", ref).strip() or None
        except GitFailed:
            return None


def sync_state(session: Session, stamp: Any, now: float) -> dict[str, Any]:
    from michi.workflow.snapshot import synced_at

    branch, remote = _target(session, stamp)
    local = _oid(session, f"refs/heads/{branch}")
    tracking = _oid(session, f"refs/remotes/{remote}/{branch}") if remote else None
    ahead = behind = None
    if local is not None and tracking is not None:
        ahead = behind = 0
        if local != tracking:  # one git process, only when they differ and moved since the last status
            from michi.git.trail import ahead_behind

            def ask() -> list[int]:
                return list(ahead_behind(session.repo.worktree, local, tracking))

            ahead, behind = _Asked(session, local, tracking).get("ahead_behind", ask, _counts)
    last = synced_at(session.repo, remote)
    return {
        "branch": branch,
        "remote": remote,
        "last_sync": None if last is None else tw_date(last),
        "since_sync": None if last is None else round(now - last, 3),
        "local": local,
        "remote_tip": tracking,
        "ahead": ahead,
        "behind": behind,
    }


def journal_entries(session: Session) -> tuple[list[dict[str, Any]], float | None, bool]:
    """The journal's entries as written, when it was last written, and whether it may not name all the
    work left (unreadable, kept aside as `journal.corrupt`, or missing: deleted, or never written). Read
    only: unlike the transaction engine's reader, a status never moves an unreadable journal aside."""
    path = session.repo.state_dir / JOURNAL
    damaged = path.with_suffix(".corrupt").exists()
    try:
        mtime = os.stat(path).st_mtime
        data = json.loads(read_regular(path))
        entries = data.get("entries", []) if isinstance(data, dict) else []
    except (OSError, ValueError, RecursionError):  # none (deleted) counts as damaged
        return [], None, True
    return [e for e in entries if isinstance(e, dict)], mtime, damaged


def _stranded(
    session: Session, sync: dict[str, Any] | None, named: set[str]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Work no journal entry names is only michi commits on the local branch that the remote lacks (ADR
    0004: `sync` finds them by their Michi-Txn): as pending as the journal's entries. Those the remote had
    once and lost (a force-push set it back) are not: `sync` never pushes them again. Those of them a
    command's note named already (`rewound.told_dropped`) come second: a command left the branch as it
    was, holding them, and the user has to leave them out. git is asked once per pair of tips (`_Asked`)."""
    if not sync or not sync.get("ahead") or not sync.get("local") or not sync.get("remote_tip"):
        return [], []
    tip, local = str(sync["remote_tip"]), str(sync["local"])
    asked = _Asked(session, local, tip)

    def ask_log() -> list[list[str | None]]:
        from michi.git.trail import log_entries

        found = log_entries(session.repo.worktree, f"{tip}..{local}", task_files_only=False, michi_only=True)
        return [
            [e.commit, e.subject, e.trailers.get("Michi-Txn"), e.trailers.get("Michi-Agent")] for e in found
        ]

    commits = asked.get("michi_commits", ask_log, _commits)
    entries = [c for c in commits if c[2] not in named]
    kept = []
    if entries:  # rare: offline work the journal lost, or commits a rewound remote dropped
        from michi.workflow import rewound

        def ask_had() -> list[str]:
            from michi import git

            repo = git.open_repo(session.repo.worktree)
            ref = f"refs/remotes/{sync['remote']}/{sync['branch']}"
            return sorted(rewound.once_on_remote(repo, ref, tip, local) & {c[0] for c in commits})

        # Asked every time, never kept: it reads the tracking ref's reflog, which a fetch after a
        # force-push changes while the two tips can be the ones kept (rare: a missing journal only).
        had = set(ask_had())
        told = rewound.told_dropped(session.repo.state_dir) if had else set()
        kept = [e for e in entries if e[0] in had and e[0] in told]
        entries = [e for e in entries if e[0] not in had]
    return [_operation(e, "stranded") for e in entries], [_operation(e, "dropped") for e in kept]


def _operation(commit: list[str | None], state: str) -> dict[str, Any]:
    oid, subject, txn, agent = commit
    return {
        "txn": txn,
        "state": state,
        "command": str(subject).removeprefix("michi: "),
        "agent": agent,
        "commit": oid,
    }


def pending(
    session: Session, now: float, lock_live: bool, sync: dict[str, Any] | None = None
) -> dict[str, Any]:
    """Journaled operations not on the remote. While a live holder works, its own `started`/`pushing`
    entry is in flight, not pending; `offline` entries wait for `michi sync` whoever holds the lock. With
    the journal damaged or missing, or naming fewer operations than the local branch has commits the
    remote lacks, michi commits there that no entry names count too (one `git log` of those commits),
    except those the remote dropped: `dropped` names those a command's note named already."""
    entries, written, unsure = journal_entries(session)
    ahead = (sync or {}).get("ahead") or 0
    dropped: list[dict[str, Any]] = []
    if unsure or ahead > len(entries):
        stranded, dropped = _stranded(session, sync, {str(e.get("txn")) for e in entries})
        entries = entries + stranded
    waiting = [e for e in entries if e.get("state") in ("offline", "stranded") or not lock_live]
    commits = [str(e["commit"]) for e in waiting if e.get("commit")]
    times = _times(session, sync, commits) if commits else {}
    stamps = [times[c] for c in commits if c in times]
    if waiting and len(stamps) < len(waiting) and written is not None:
        stamps.append(written)  # an entry without a commit yet: as old as the journal's last write
    oldest = min(stamps, default=None)
    return {
        "count": len(waiting),
        "in_flight": len(entries) - len(waiting),
        "oldest_age": None if oldest is None else round(max(0.0, now - oldest), 3),
        "operations": [
            {
                "txn": e.get("txn"),
                "state": e.get("state"),
                "command": e.get("command"),
                "agent": e.get("agent"),
                "commit": e.get("commit"),
            }
            for e in waiting
        ],
        "dropped": dropped,  # michi commits a force-push dropped, still on the branch after a note said so
    }
