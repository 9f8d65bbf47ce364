"""michi commits on the local branch that never reached the remote and that no journal entry names
(ADR 0004): the journal was damaged or removed, or a branch was restored from a backup. `michi sync`
finds them by their `Michi-Txn` trailer and completes them when that is provably the same as applying
them on the remote tip; otherwise it stops and says what to do. Nothing of the user's is pushed."""

from __future__ import annotations

from typing import TYPE_CHECKING

from michi import git
from michi.errors import GitFailed
from michi.plain import Plain
from michi.workflow.local import michi_txn
from michi.workflow.owned import all_michis

if TYPE_CHECKING:
    from michi.git.repo import Repo


class Stranded(Plain):
    __slots__ = ("oid", "subject", "txn")

    def __init__(self, oid: str, txn: str, subject: str) -> None:
        self.oid, self.txn, self.subject = oid, txn, subject


def find(repo: Repo, local: str | None, remote_tip: str | None, known: set[str]) -> list[Stranded]:
    """michi commits in `remote_tip..local` (oldest first) whose txn is not in `known` (the journal's). A
    commit with a `Michi-Txn` that changes anything but michi's files was amended by the user (`git commit
    --amend` of the commit michi had checked out): it is the user's, never dropped nor pushed as michi's."""
    if local is None or remote_tip is None or local == remote_tip:
        return []
    found = []
    for oid, message in git.commit_messages(repo, local, remote_tip):
        txn = michi_txn(message)
        if txn is not None and txn not in known and _only_michis(repo, oid):
            subject = message.split(b"\n", 1)[0].decode("utf-8", "replace")
            found.append(Stranded(oid, txn, subject))
    return found


def _only_michis(repo: Repo, oid: str) -> bool:
    meta = git.read_commit(repo, oid)
    return len(meta.parents) == 1 and all_michis(git.diff_trees(repo, meta.parents[0], oid))


def replay(repo: Repo, commits: list[Stranded], tip: str, remote: str, branch: str) -> str:
    """`commits` laid on `tip`, each exactly as made: only when every file a commit changes is on `tip`
    as it was before that commit (so applying its operation there would write the same bytes). Else
    raises `stranded_commits` (exit 5) naming the commits and the way out."""
    for item in commits:
        meta = git.read_commit(repo, item.oid)
        changes = git.diff_trees(repo, meta.parents[0], item.oid) if len(meta.parents) == 1 else None
        clash = None if changes is None else set(changes) & set(git.diff_trees(repo, meta.parents[0], tip))
        if changes is None or clash:  # (`find` passes only commits that change michi's files alone)
            raise _stuck(commits, f"{remote}/{branch}", branch, sorted(clash or [])[:3])
        tree = git.edit_tree(repo, git.tree_of(repo, tip), changes)
        tip = git.write_commit(repo, tree, [tip], meta.headers, meta.message)
    return tip


def _stuck(commits: list[Stranded], where: str, branch: str, clash: list[str]) -> GitFailed:
    listed = ", ".join(f"{c.oid[:10]} {c.subject!r}" for c in commits)
    why = f"{', '.join(clash)} changed on the remote since" if clash else "one of them is a merge"
    return GitFailed(
        f"{len(commits)} michi commit(s) on your local {branch} never reached {where} and no journal "
        f"entry can redo them ({listed}); they cannot be replayed as they are: {why}",
        code="stranded_commits",
        hint=f"redo each operation with michi (see `git log --format='%h %s' {where}..{branch}`), then "
        f"drop those commits from your branch (`git rebase -i {where}`, delete their lines)",
    )
