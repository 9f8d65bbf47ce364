"""Which remote and branch the tasks live on, decided before the lock is taken."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from michi import git
from michi.config import Config

if TYPE_CHECKING:
    from git import Repo


@dataclass(frozen=True)
class Target:
    branch: str
    remote: str | None  # None: the repository has no such remote, so commits stay local
    offline: bool  # a remote exists but the caller asked not to use it (work stays pending)

    @property
    def local_ref(self) -> str:
        return f"refs/heads/{self.branch}"

    @property
    def remote_ref(self) -> str | None:
        return f"refs/remotes/{self.remote}/{self.branch}" if self.remote else None

    @property
    def online(self) -> bool:
        return self.remote is not None and not self.offline


def resolve(repo: Repo, config: Config, offline: bool = False) -> Target:
    remote = config.remote if git.remote_exists(repo, config.remote) else None
    branch = config.branch or (remote and git.remote_default_branch(repo, remote)) or ""
    if not branch and remote:
        branch = next((b for b in ("main", "master") if git.ref_oid(repo, f"refs/remotes/{remote}/{b}")), "")
    if not branch:
        branch = git.head(repo).branch or "main"
    return Target(branch=branch, remote=remote, offline=offline and remote is not None)
