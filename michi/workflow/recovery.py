"""Recognising work that already landed, and reporting what became of pending work (ADR 0004).

An operation is identified on the remote by its `Michi-Txn` trailer, never by the commit the journal last
named: a push orphaned by a SIGKILL may land after the next holder rebuilt the operation as another
commit. Because michi only ever pushes fast-forward onto the tip it built on, a transaction whose id is
not in `base..tip` cannot be on the remote branch, and a commit built on `tip` can land only while the
remote is still `tip`: so scanning before each application keeps every id on one commit at most.
"""

from __future__ import annotations

import re
from collections import defaultdict
from typing import TYPE_CHECKING, Any

from michi import git
from michi.plain import Plain
from michi.workflow.journal import Entry
from michi.workflow.local import michi_txn

if TYPE_CHECKING:
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
