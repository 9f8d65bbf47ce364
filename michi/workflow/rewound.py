"""A remote set back by a force-push: which of this clone's commits it dropped, and telling the user once
(ADR 0004).

Whoever set the remote back meant it: the local update leaves those commits out of the branch (as `git
pull --rebase` does), `sync` never pushes them again, and michi's among them are named in one note, once
for good (`dropped-told` in the state folder remembers which). `michi status` reads the same answers.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Callable, Collection
from typing import TYPE_CHECKING

from michi import git
from michi.errors import GitFailed
from michi.plain import Plain

if TYPE_CHECKING:
    from pathlib import Path

    from michi.git.repo import Repo
    from michi.workflow.target import Target

TOLD = "dropped-told"  # in michi's state folder: the dropped commits a note has named
_OID = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")


def once_on_remote(repo: Repo, tracking_ref: str, tip: str, local: str, seen: str | None = None) -> set[str]:
    """Commits of `local`'s history that the remote branch had once and no longer has at `tip` (a
    force-push set it back): those on `seen` (the remote tip michi saw before `tip`) or on an earlier tip of
    `tracking_ref` by its reflog (git's fork point), but not on `tip`. A few git processes: asked only of
    michi commits no journal entry names, which are otherwise offline work whose journal was lost."""
    starts = [git.fork_point(repo, tracking_ref, local)]
    if seen is not None and seen != tip:
        starts.append(git.merge_base(repo, local, seen))
    had: set[str] = set()
    for start in {s for s in starts if s is not None}:
        had.update(git.rev_list(repo, tip, start))
    return had


class Lost(Plain):
    """What the remote dropped of the local branch's own commits: `dropped` (all of them), `gone`
    (michi's among them, oldest first) and `notes` (the one note naming those no note named before)."""

    __slots__ = ("dropped", "gone", "notes")

    def __init__(self, dropped: set[str], gone: list[str], notes: list[str]) -> None:
        self.dropped, self.gone, self.notes = dropped, gone, notes


def lost(
    repo: Repo,
    state_dir: Path,
    target: Target,
    *,
    seen: str | None,
    new_tip: str,
    local: str,
    own: list[str],
    drop: Collection[str],
    txn_of: Callable[[str], str | None],
) -> Lost:
    """Of `own` (the local branch's commits `new_tip` lacks, oldest first), those the remote had and no
    longer has: all of them when the branch is the remote tip michi last saw (`seen`); otherwise asked of
    git only when a michi commit no journal entry names (`drop`: those the journal names) is among them,
    else it is offline work whose journal was lost, which `sync` pushes. `txn_of`: a commit's `Michi-Txn`
    (None: not michi's). michi's among them are named once each: a branch left as it was keeps them,
    command after command."""
    if local == seen:
        dropped = set(own)
    elif not any((txn := txn_of(c)) and txn not in drop for c in own):
        dropped = set()
    else:
        assert target.remote_ref is not None
        dropped = once_on_remote(repo, target.remote_ref, new_tip, local, seen) & set(own)
    gone = [c for c in own if c in dropped and txn_of(c)]
    notes: list[str] = []
    if gone:
        named = told_dropped(state_dir)
        new = [c for c in gone if c not in named]
        if new:
            notes.append(describe_dropped(repo, new, f"{target.remote}/{target.branch}"))
            remember_told(state_dir, gone)
    return Lost(dropped, gone, notes)


def describe_dropped(repo: Repo, commits: list[str], where: str) -> str:
    """One line naming the michi commits (oldest first) that `where` had and lost, with what to do: michi
    never pushes them again (whoever set the remote back meant it, ADR 0004)."""
    named = [_what(repo, oid) for oid in commits[:3]]
    more = f" and {len(commits) - 3} more" if len(commits) > 3 else ""
    return (
        f"{where} was set back (a force-push) and no longer has {len(commits)} michi change(s) that had "
        f"landed there: {'; '.join(named)}{more}; michi does not push them again: redo with michi what "
        "should stand (a dropped add: add the task again; `git show <commit>` shows what each did)"
    )


def told_dropped(state_dir: Path) -> set[str]:
    """The dropped commits a note has named already (`describe_dropped`): read only when the remote
    dropped some, never followed through a link; unreadable, they are named again."""
    from michi.atomic import read_regular

    try:
        return {
            w for w in read_regular(state_dir / TOLD).decode("ascii", "replace").split() if _OID.fullmatch(w)
        }
    except OSError:
        return set()


def remember_told(state_dir: Path, commits: list[str]) -> None:
    """Note that `commits` (those the local branch still holds) were named: a branch left as it was keeps
    them, and every later command found them again and said so again. Written atomically (a link there
    is replaced, not followed); a failed write only means the note comes once more."""
    from michi.atomic import write_atomic

    with contextlib.suppress(OSError):
        write_atomic(state_dir / TOLD, "".join(f"{c}\n" for c in sorted(commits)).encode())


def _what(repo: Repo, oid: str) -> str:
    """`task add 2` ("its description", commit 1a2b3c4d5e): a dropped commit, as a person can redo it."""
    meta = git.read_commit(repo, oid)
    message = meta.message.decode("utf-8", "replace")
    subject = message.split("\n", 1)[0].removeprefix("michi: ")
    found = re.search(r"^Michi-Task: *([0-9a-f-]{36}) *$", message, re.MULTILINE)
    description = _description(repo, meta.parents, oid, found.group(1)) if found else None
    told = [json.dumps(description, ensure_ascii=False)] if description else []
    return f"`{subject}` ({', '.join([*told, f'commit {oid[:10]}'])})"


def _description(repo: Repo, parents: tuple[str, ...], oid: str, uuid: str) -> str | None:
    """The description of task `uuid` as commit `oid` left it (None when it deleted or has no such file)."""
    if len(parents) != 1:
        return None
    try:
        for path, entry in git.diff_trees(repo, parents[0], oid).items():
            if entry is not None and path.endswith(f"/{uuid}.json"):
                text = json.loads(git.read_blob(repo, entry[1])).get("description")
                return _short(text) if isinstance(text, str) else None
    except (ValueError, AttributeError, RecursionError, GitFailed):
        return None
    return None


def _short(text: str, width: int = 60) -> str:
    """A description as one short line of a note."""
    line = " ".join(text.split())
    return line if len(line) <= width else line[: width - 1] + "…"
