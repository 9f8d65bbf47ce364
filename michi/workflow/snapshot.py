"""Read-only views of the task branch: no lock, no network unless asked (`--fetch`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from michi import git
from michi.config import Config
from michi.repo import RepoPaths
from michi.workflow.journal import Journal
from michi.workflow.target import resolve
from michi.workflow.tree import GitTaskTree

if TYPE_CHECKING:
    from git import Repo


class Snapshot(GitTaskTree):
    def __init__(
        self, repo: Repo, commit: str | None, branch: str, ref: str, synced_at: float | None
    ) -> None:
        super().__init__(repo, commit)
        self.branch = branch
        self.ref = ref
        self.synced_at = synced_at  # when michi last talked to the remote; None = never (or no remote)


def read_snapshot(paths: RepoPaths, config: Config, *, fetch: bool = False) -> Snapshot:
    repo = git.open_repo(paths.worktree)
    target = resolve(repo, config)
    marker = paths.state_dir / "synced"
    if target.remote_ref and fetch:
        git.fetch_branch(repo, target.remote or "", target.branch)
        marker.parent.mkdir(parents=True, exist_ok=True)
        marker.touch()
    # Offline work not yet pushed lives only on the local branch; otherwise the remote-tracking branch
    # is the truth as last synced (the local branch may hold the user's own unrelated commits).
    ref = target.remote_ref
    if ref is None or Journal(paths.state_dir).load() or git.ref_oid(repo, ref) is None:
        ref = target.local_ref
    synced = marker.stat().st_mtime if target.remote and marker.exists() else None
    return Snapshot(repo, git.ref_oid(repo, ref), target.branch, ref, synced)
