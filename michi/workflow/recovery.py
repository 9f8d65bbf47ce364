"""Recognising work that already landed, and reporting what became of pending work (ADR 0004).

An operation is identified on the remote by its `Michi-Txn` trailer, never by the commit the journal last
named: a push orphaned by a SIGKILL may land after the next holder rebuilt the operation as another
commit. Because michi only ever pushes fast-forward onto the tip it built on, a transaction whose id is
not in `base..tip` cannot be on the remote branch, and a commit built on `tip` can land only while the
remote is still `tip`: so scanning before each application keeps every id on one commit at most.

An offline commit can also reach the remote by the user's own `git pull --rebase && git push` (the rebase
is clean when both sides moved `.michi/last-id` alike), with its provisional ids: `renumberings` finds the
task it added that shares its id with one that landed first, and makes the renumbering a pending operation
of its own (ADR 0007).
"""

from __future__ import annotations

import re
from collections import defaultdict
from typing import TYPE_CHECKING, Any

from michi import git
from michi.plain import Plain
from michi.workflow.journal import OFFLINE, Entry
from michi.workflow.local import michi_txn
from michi.workflow.mutation import Mutation

if TYPE_CHECKING:
    from pathlib import Path

    from michi.git.repo import Repo

_TXN_ID = re.compile(r"[0-9a-f]{1,64}")


def landed(repo: Repo, tip: str | None, entries: list[Entry]) -> dict[str, str]:
    """txn -> the commit on `tip`'s history that carries it, for each of `entries` that landed.

    One `git log --grep` per distinct entry base (usually one): git filters the history in C."""
    by_base: dict[str | None, list[str]] = defaultdict(list)
    for e in entries:
        # A base this clone no longer has (the remote was rewritten, the clone pruned): the whole history.
        known = e.base is not None and repo.kind(e.base) == "commit"
        by_base[e.base if known else None].append(e.txn)
    found: dict[str, str] = {}
    for base, txns in by_base.items():
        found.update(find_txns(repo, tip, base, txns))
    return found


def find_txns(repo: Repo, tip: str | None, exclude: str | None, txns: list[str]) -> dict[str, str]:
    """txn -> the michi commit in `exclude..tip` carrying it, for those of `txns` that are there."""
    wanted = [t for t in txns if _TXN_ID.fullmatch(t)]
    if tip is None or not wanted:
        return {}
    found: dict[str, str] = {}
    pattern = f"^Michi-Txn: *({'|'.join(wanted)}) *$"
    for oid, message in git.messages_matching(repo, tip, exclude, pattern):
        txn = michi_txn(message)
        if txn in wanted:
            found.setdefault(txn, oid)  # newest first; two would be the very bug this prevents
    return found


def renumberings(
    repo: Repo, state_dir: Path, tip: str | None, entries: list[Entry], found: dict[str, str]
) -> list[Entry]:
    """For each offline entry of `entries` found landed (`found`: txn -> the commit carrying it on `tip`)
    that gave a task an id another task file holds on `tip`, unless its commit landed before that file
    did: a pending operation giving those tasks fresh ids (`michi.tasks.ids.renumber`). Its txn is made
    from the entry's, so asking again (the next round, a run after a crash) names the same operation,
    which lands once. Offline entries are only ever found landed when someone else pushed them: michi's
    own pushes turn them into `pushing` ones first. Costs nothing when no offline entry landed."""
    named = {e.txn for e in entries}
    landed = [e for e in entries if e.txn in found and e.state == OFFLINE and e.ids]
    todo = [e for e in landed if renumbering_txn(e.txn) not in named]
    if tip is None or not todo:
        return []
    from michi.tasks import idmap, index
    from michi.tasks.ids import RENUMBER
    from michi.workflow.tree import GitTaskTree

    held = index.light(GitTaskTree(repo, tip), state_dir)
    made = []
    for entry in todo:
        clashes: dict[str, int] = {}  # uuid -> its provisional id: what `Report.compare_ids` tells from
        for uuid, old in entry.ids.items():
            paths = held.paths_with_id(old)
            own = [p for p in paths if idmap.stem(p) == uuid]
            others = [p for p in paths if idmap.stem(p) != uuid]
            # Only a task the offline commit added has a provisional id; one it only changed (a modify,
            # an annotate) had its id already, and another file's claim on it is not this entry's doing.
            if (
                others
                and own
                and _added(repo, tip, own[0]) == found[entry.txn]
                and not _first(repo, tip, found[entry.txn], others)
            ):
                clashes[uuid] = old
        if clashes:
            tasks = [{"uuid": uuid, "old": old} for uuid, old in clashes.items()]
            mutation = Mutation(RENUMBER, {"tasks": tasks})
            txn = renumbering_txn(entry.txn)
            made.append(Entry(txn, mutation, entry.command, entry.agent, base=tip, ids=clashes))
    return made


def renumbering_txn(txn: str) -> str:
    import hashlib  # only here: hashlib loads OpenSSL (ADR 0010)

    return hashlib.sha256(f"michi renumbering of {txn}".encode()).hexdigest()[:32]


def _added(repo: Repo, tip: str, path: str) -> str | None:
    """The commit that added the task file at `path` on `tip` (across `michi migrate`, ADR 0006)."""
    from michi.tasks.domains import other_layout

    added = [r.commit for r in git.path_history(repo, tip, path, *other_layout(path)) if r.blob][:1]
    return added[0] if added else None


def _first(repo: Repo, tip: str, ours: str, others: list[str]) -> bool:
    """Did `ours` land before every one of `others` (paths on `tip`) was added? Only when each was added by a
    commit built on top of it; one added beside it (a merge brought them together) may have been on the
    remote first, and the offline task, whose id was only ever provisional, is the one to give way."""
    for path in others:
        added = _added(repo, tip, path)
        if added is None or not git.is_ancestor(repo, ours, added):
            return False
    return True


class Report(Plain):
    """What became of the pending (interrupted or offline) operations in one application."""

    __slots__ = ("refused", "renumbered")

    def __init__(
        self, refused: list[dict[str, Any]] | None = None, renumbered: list[dict[str, Any]] | None = None
    ) -> None:
        self.refused = [] if refused is None else refused  # {command, txn, code, reason}
        self.renumbered = [] if renumbered is None else renumbered  # {uuid, old, new, command}

    def refuse(self, entry: Entry, code: str, reason: str) -> None:
        self.refused.append({"command": entry.command, "txn": entry.txn, "code": code, "reason": reason})

    def compare_ids(self, entry: Entry, now: dict[str, int]) -> None:
        """An offline add's id was provisional: say when the task got another one (ADR 0007)."""
        told = {r["uuid"] for r in self.renumbered}  # once per task, not per operation on it
        for uuid, old in entry.ids.items():
            new = now.get(uuid)
            if new is not None and new != old and uuid not in told:
                self.renumbered.append({"uuid": uuid, "old": old, "new": new, "command": entry.command})

    def notes(self) -> list[str]:
        return describe(self.refused, self.renumbered)


def describe(refused: list[dict[str, Any]], renumbered: list[dict[str, Any]]) -> list[str]:
    """One line per renumbered task and per refused operation, for people."""
    lines = [
        f"task {r['old']} (added offline) is now task {r['new']}: another clone took {r['old']} "
        f"meanwhile (uuid {r['uuid']})"
        for r in renumbered
    ]
    lines += [f"pending `michi {r['command']}` was not applied: {r['reason']}" for r in refused]
    return lines
