"""Which remote and branch the tasks live on, decided before the lock is taken."""

from __future__ import annotations

from typing import TYPE_CHECKING

from michi import git
from michi.config import Config
from michi.errors import ConfigError
from michi.plain import Plain
from michi.repo import RepoPaths

if TYPE_CHECKING:
    from michi.git import Repo


class Target(Plain):
    __slots__ = ("branch", "offline", "remote")

    def __init__(self, branch: str, remote: str | None, offline: bool) -> None:
        self.branch = branch
        self.remote = remote  # None: the repository has no such remote, so commits stay local
        self.offline = offline  # a remote exists but the caller asked not to use it (work stays pending)

    @property
    def local_ref(self) -> str:
        return f"refs/heads/{self.branch}"

    @property
    def remote_ref(self) -> str | None:
        return f"refs/remotes/{self.remote}/{self.branch}" if self.remote else None

    @property
    def online(self) -> bool:
        return self.remote is not None and not self.offline


def resolve(repo: Repo, config: Config, offline: bool = False, changing: bool = False) -> Target:
    """`changing`: for a transaction, whose commit must reach the remote. Without the configured remote
    michi works on the local branch alone, as it should in a purely local repository; but in one that has
    other remotes (a clone whose remote is `upstream`, a misspelled `remote`) the change would exit 0 and
    never reach anyone, and `sync` would find nothing to push: that is a configuration error."""
    remote = config.remote if git.remote_exists(repo, config.remote) else None
    others = git.remote_names(repo) if remote is None and changing else []
    if others:
        raise ConfigError(
            f"remote {config.remote!r} is not a remote of this repository (it has {', '.join(others)}): "
            "a change would stay local and reach nobody",
            hint=f'set remote = "{others[0]}" in .michi.toml, or MICHI_REMOTE={others[0]}',
        )
    branch = config.branch or (remote and git.remote_default_branch(repo, remote)) or ""
    if not branch and remote:
        branch = next((b for b in ("main", "master") if git.ref_oid(repo, f"refs/remotes/{remote}/{b}")), "")
    if not branch:
        branch = git.head(repo).branch or "main"
    if remote is not None:
        _check_refspecs(repo, remote, branch)
        if changing and not offline:
            from michi.git.remote import one_push_url

            one_push_url(repo, remote)  # ADR 0004: a push must land on one repository, or not at all
    return Target(branch=branch, remote=remote, offline=offline and remote is not None)


def _check_refspecs(repo: Repo, remote: str, branch: str) -> None:
    """git updates what the remote's fetch refspecs map a branch onto whenever it fetches or pushes that
    branch: mapped onto a local branch (a mirror's `+refs/heads/*:refs/heads/*`), michi's push reset the
    user's branch, unpushed commits and all, and its fetch failed on a checked-out one."""
    source = f"refs/heads/{branch}"
    for spec in git.fetch_refspecs(repo, remote):
        src, _, dst = spec.removeprefix("+").partition(":")
        if "*" in src and "*" in dst:
            head, _, tail = src.partition("*")
            if not (source.startswith(head) and source.endswith(tail) and len(source) >= len(src) - 1):
                continue
            dst = dst.replace("*", source[len(head) : len(source) - len(tail)], 1)
        elif src != source:
            continue
        if dst and not dst.startswith("refs/remotes/"):
            raise ConfigError(
                f"remote.{remote}.fetch = {spec} makes every fetch and push of {branch} overwrite "
                f"{dst} (your own ref)",
                hint=f"map it into refs/remotes/ (git config --replace-all remote.{remote}.fetch "
                f"'+refs/heads/*:refs/remotes/{remote}/*')",
            )


def inputs(paths: RepoPaths, config: Config) -> tuple[object, ...] | None:
    """Everything `resolve` reads, by file reads alone: equal inputs resolve to the same target, so the read
    path can reuse the target it resolved last time without git or GitPython (ADR 0008). None when only git
    can tell (config includes, the reftable backend)."""
    common = paths.common_dir
    conf = git.config_fingerprint(paths.git_dir, common) if git.refs_are_files(common) else None
    if conf is None:
        return None
    try:
        fallbacks: tuple[object, ...] = ()
        if not config.branch:  # the remote's default branch, else main or master, else HEAD's branch
            remote = f"refs/remotes/{config.remote}/"
            fallbacks = (
                git.read_ref_file(common, remote + "HEAD"),
                git.read_ref(common, remote + "main") is not None,
                git.read_ref(common, remote + "master") is not None,
                git.read_ref_file(paths.git_dir, "HEAD"),
            )
    except (OSError, ValueError):
        return None
    return (config.remote, config.branch, conf, fallbacks)
