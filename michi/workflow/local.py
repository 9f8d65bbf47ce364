"""Bring the local task branch (and, when it is checked out here, the index and work tree) up to date
with what michi pushed, without touching anything of the user's (ADR 0004).

The user's unpushed commits are replayed on top of the new remote tip by tree surgery (each commit's own
changed paths laid over the new base), because michi's commits only touch `.tasks/` files. Anything this
cannot do without risk (merge commits, signed commits, a user commit touching a file that changed
upstream, local changes to a file michi changed) leaves the branch exactly as it was and says so: nothing
is lost, the branch is just behind, as after a `git fetch`.
"""

from __future__ import annotations

import os
import re
from collections.abc import Collection, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from michi import faults, git
from michi.errors import GitFailed
from michi.git import environ
from michi.repo import RepoPaths
from michi.workflow import rewound
from michi.workflow.owned import all_michis
from michi.workflow.target import Target

if TYPE_CHECKING:
    from michi.git import Repo

TXN_TRAILER = re.compile(rb"^Michi-Txn: *([0-9a-f]+) *$", re.MULTILINE)
UPDATE_MESSAGE = "michi: update task branch"  # the reflog's word for the move after a push


def michi_txn(message: bytes) -> str | None:
    if not message.startswith(b"michi: "):
        return None
    found = TXN_TRAILER.search(message)
    return found.group(1).decode() if found else None


def _others(paths: RepoPaths) -> list[Path]:
    """The git dirs of this repository's other work trees."""
    return [f for f in [paths.common_dir, *(paths.common_dir / "worktrees").glob("*")] if f != paths.git_dir]


def checked_out_in(paths: RepoPaths, branch: str) -> Path | None:
    """The git dir of the other work tree that has `branch` checked out, if one has."""
    return next((f for f in _others(paths) if _read(f / "HEAD") == f"ref: refs/heads/{branch}"), None)


def held_elsewhere(paths: RepoPaths, branch: str) -> str | None:
    """How another work tree of this repository holds `branch`, if one does: "checked out" (its HEAD: its
    index is not ours to move) or "being rebased" (a rebase stopped there ends by moving the branch from
    where it started: git refuses to move such a branch, and the rebase could not end after michi did)."""
    ref = f"refs/heads/{branch}"
    for folder in _others(paths):
        if _read(folder / "HEAD") == f"ref: {ref}":
            return "checked out"
        if any(_read(folder / rebase / "head-name") == ref for rebase in ("rebase-merge", "rebase-apply")):
            return "being rebased"
    return None


def _read(path: Path) -> str | None:
    try:
        return path.read_text(errors="replace").strip() if path.is_file() else None
    except OSError:
        return None


def other_index(paths: RepoPaths) -> str | None:
    """GIT_INDEX_FILE, when it names another index than this work tree's own. Moving that one (git obeys
    it) and then the branch left the work tree's index behind: `git status` showed michi's change
    reverted and staged, for the user's next commit to push."""
    named = environ.current().get("GIT_INDEX_FILE")
    if not named:
        return None
    where = os.path.realpath(os.path.join(paths.worktree, named))  # git reads a relative one from the top
    return None if where == os.path.realpath(paths.git_dir / "index") else named


def _replay(
    repo: Repo,
    base: str,
    new_tip: str,
    commits: list[str],
    drop: Collection[str],
    avoid: Collection[str] = (),
) -> str | None:
    """Replay `commits` (oldest first) on `new_tip`; None when that is not provably safe. `avoid`: paths of
    commits left out (the remote dropped them), which a replayed commit may not touch either."""
    upstream = set(git.diff_trees(repo, base, new_tip)).union(avoid)
    parent, parent_tree = new_tip, git.tree_of(repo, new_tip)
    for oid in commits:
        meta = git.read_commit(repo, oid)
        if len(meta.parents) != 1 or meta.signed:
            return None  # a merge cannot be laid over; a signed commit would lose its signature
        changes = git.diff_trees(repo, meta.parents[0], oid)
        if michi_txn(meta.message) in drop:
            if not all_michis(changes):
                return None  # amended with something of the user's (`git commit --amend`): not michi's
            continue  # michi's own offline commit, now on the remote in its re-applied form
        if _overlap(upstream, changes):
            return None
        parent_tree = git.edit_tree(repo, parent_tree, changes, strict=False)  # the user's own paths
        parent = git.write_commit(repo, parent_tree, [parent], meta.headers, meta.message)
    return parent


def _overlap(upstream: Collection[str], changes: Collection[str]) -> bool:
    """Whether a replayed commit's paths meet the remote's changes: the same path, or one inside the
    other (a file of the user's where a folder of tasks came, or the other way round: `git rebase` stops
    there on a file/folder conflict; laid over, the folder was replaced by the file)."""
    within = {folder for path in upstream for folder in _folders(path)}
    return any(
        path in upstream or path in within or any(f in upstream for f in _folders(path)) for path in changes
    )


def _folders(path: str) -> Iterator[str]:
    """The folders `path` lies in, innermost first: `a/b/c` -> `a/b`, `a`."""
    at = path.rfind("/")
    while at > 0:
        yield path[:at]
        at = path.rfind("/", 0, at)


def _obsolete(repo: Repo, own: list[str], drop: Collection[str], target: Target, gone: list[str]) -> str:
    """What to leave out of that rebase: michi's own commits on the branch whose operations are on the
    remote now, made again there (an offline add renumbered), and those the remote dropped (`gone`, a
    force-push: named once in their own note, then only here). Rebased as they are, the first conflicted
    with their remade selves in michi's files (`.michi/last-id`, the task file), and resolving that by
    hand gave a task a second id."""
    found = [c[:10] for c in own if michi_txn(git.read_commit(repo, c).message) in drop]
    where = f"{target.remote}/{target.branch}" if target.remote else target.branch
    said = [f"michi's own {', '.join(found)} are on the remote already, made again there"] if found else []
    if gone:
        said.append(f"michi's {', '.join(c[:10] for c in gone)} were dropped from {where} (a force-push)")
    if not said:
        return ""
    return f"; {'; '.join(said)}: leave them out (`git rebase -i {where}`, delete their lines)"


def interrupted_goals(
    repo: Repo, local: str | None, interrupted: Collection[str], drop: Collection[str]
) -> Iterator[str]:
    """Where a michi killed between moving the index and moving the branch left the index: at one of its
    commits, or, when the branch held the user's own commits, at those commits replayed onto one of them.
    A replay writes the same trees with the same headers and messages, so it is the same commit again;
    made only when asked (a recovery whose plain move was refused)."""
    yield from interrupted
    for commit in interrupted if local is not None else ():
        assert local is not None
        base = git.merge_base(repo, local, commit)
        if base is None or base == local:
            continue  # the branch was behind: the move went to `commit` itself
        replayed = _replay(repo, base, commit, git.rev_list(repo, commit, local), drop)
        if replayed is not None:
            yield replayed


def move_checkout(
    repo: Repo,
    local: str | None,
    goal: str,
    interrupted: Iterable[str],
    known: git.Moves | None = None,
    own: Collection[str] = (),
) -> str | None:
    """Move index and work tree from `local` to `goal`; None on success, else git's refusal.

    A michi process killed between moving the index and moving the branch (ADR 0004) left the index at
    one of the `interrupted` commits while the branch still names `local`; moving from there finishes
    its work: only when the index holds that commit's version of every path it changed (git's own check
    covers only the paths that differ from there on to `goal`).
    `known`, when given, is every path that differs from `local` to `goal` with its entries in both (the
    transaction's own edits)."""
    refused = git.read_tree_update(
        repo, local or git.EMPTY_TREE, goal, known=known if local else None, own=own
    )
    for commit in interrupted:
        if refused is None:
            break
        if commit == local:
            continue
        # Only where the index really is at `commit`: a move from there checks the paths that differ on
        # to `goal`, not those `commit` changed, and `commit` may be the goal itself (its push landed,
        # the index never moved): the branch would move while the index kept the old files.
        where = list(git.diff_trees(repo, local or git.EMPTY_TREE, commit))
        if git.index_holds(repo, commit, where) and git.read_tree_update(repo, commit, goal) is None:
            refused = None
    return refused


_WALK = 64  # commits `_descends` reads in this process before it asks git


def _descends(repo: Repo, tip: str, ancestor: str) -> bool:
    """Is `ancestor` in `tip`'s history? Walked back from `tip` through this process's `cat-file` (the
    commits a transaction just wrote or read are in its cache), a few commits at most: after a push the
    tip michi built on, or a fetched one a few commits past it, is found at once, with no git process.
    git answers the rest, and a remote set back (its old tip is nowhere behind the new one)."""
    todo, seen = [tip], set[str]()
    try:
        while todo and len(seen) < _WALK:
            oid = todo.pop(0)
            if oid == ancestor:
                return True
            if oid not in seen:
                seen.add(oid)
                todo.extend(git.read_commit(repo, oid).parents)
    except GitFailed:  # a commit this clone lacks (a shallow clone's edge): git knows
        todo = [tip]
    return bool(todo) and git.is_ancestor(repo, ancestor, tip)


def _paths_of(repo: Repo, commits: Iterable[str]) -> set[str]:
    paths: set[str] = set()
    for oid in commits:
        parents = git.read_commit(repo, oid).parents
        paths.update(git.diff_trees(repo, parents[0] if parents else git.EMPTY_TREE, oid))
    return paths


def update_local(
    repo: Repo,
    paths: RepoPaths,
    target: Target,
    old_remote: str | None,
    new_tip: str,
    drop: Collection[str],
    interrupted: Collection[str] = (),
    known: git.Moves | None = None,
) -> list[str]:
    """Move the local task branch to `new_tip` plus the user's own local commits. Returns notes. Commits
    the remote had and lost (set back by a force-push) are left out, michi's named in a note, first."""
    told: list[str] = []  # what the remote dropped of michi's, when it was set back
    notes = _update(repo, paths, target, old_remote, new_tip, drop, interrupted, known, told)
    return told + notes


def _update(
    repo: Repo,
    paths: RepoPaths,
    target: Target,
    old_remote: str | None,
    new_tip: str,
    drop: Collection[str],
    interrupted: Collection[str],
    known: git.Moves | None,
    told: list[str],
) -> list[str]:
    ref = target.local_ref
    local = git.ref_oid(repo, ref)
    head = git.head(repo)
    here = head.branch == target.branch
    if local == new_tip:
        return []
    if not here and (held := held_elsewhere(paths, target.branch)) is not None:
        return [f"branch {target.branch} is {held} in another work tree; it was not moved"]
    if local is None:
        if not here:
            return []  # no local task branch: reads use the remote-tracking branch
        goal = new_tip
    elif (local == old_remote and _descends(repo, new_tip, local)) or (
        local != old_remote and git.is_ancestor(repo, local, new_tip)
    ):
        goal = new_tip
        if local != old_remote:
            known = None  # the transaction's edits start at old_remote, not at local
    else:
        known = None
        base = git.merge_base(repo, local, new_tip)
        own = git.rev_list(repo, new_tip, local)
        lost = rewound.lost(
            repo,
            paths.state_dir,
            target,
            seen=old_remote,
            new_tip=new_tip,
            local=local,
            own=own,
            drop=drop,
            txn_of=lambda c: michi_txn(git.read_commit(repo, c).message),
        )
        dropped, gone = lost.dropped, lost.gone  # gone: michi's commits among them
        told.extend(lost.notes)
        own = [c for c in own if c not in dropped]
        avoid = _paths_of(repo, dropped) if dropped and own else ()
        replayed = None if base is None else _replay(repo, base, new_tip, own, drop, avoid)
        if replayed is None and any(git.read_commit(repo, c).signed for c in own):
            return [
                f"your local branch {target.branch} has signed commits; michi never rewrites them (the "
                "signature would be lost), so it was left as it was (`git pull --rebase --gpg-sign` "
                "rebases and signs them again when you are ready)",
            ]
        if replayed is None:
            return [
                f"your local branch {target.branch} has commits michi could not safely replay on the "
                f"new remote tip; it was left as it was (run `git pull --rebase` when ready)"
                + _obsolete(repo, own, drop, target, gone),
            ]
        goal = replayed
    if here and (index := other_index(paths)) is not None:
        return [
            f"local branch {target.branch} was not updated: GIT_INDEX_FILE={index} is not this work "
            "tree's index; nothing of yours was touched (run `michi sync` without it to catch up)",
        ]
    if here:
        candidates = interrupted_goals(repo, local, interrupted, drop)
        refused = move_checkout(
            repo, local, goal, candidates, known if local is not None else None, interrupted
        )
        if refused is not None:
            from michi.git.checkout import NESTED

            if refused.startswith(NESTED):  # not the user's changes: a nested repository (ADR 0006)
                return [
                    f"local branch {target.branch} was not updated: {refused.removeprefix(NESTED)}",
                ]
            return [
                f"local branch {target.branch} was not updated because your work tree has changes "
                f"in files michi changed ({refused.splitlines()[0]}); nothing of yours was touched",
            ]
        faults.point("local")  # index and work tree moved, branch not yet: recovery must cope
    try:
        git.update_ref(repo, ref, goal, local, UPDATE_MESSAGE)
    except GitFailed as exc:
        # The branch moved under us (a commit made without the hook): put the index back where it was.
        if here:
            git.read_tree_update(repo, goal, local or git.EMPTY_TREE)
        if exc.code == "git_lock_held":
            raise  # not a moved branch: say which lock file is in the way
        return [f"local branch {target.branch} moved while michi worked; it was left as it is"]
    return []
