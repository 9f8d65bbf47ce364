"""The repository through GitPython: opening it, running git, refs, the user's index (ADR 0004)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from michi.errors import GitFailed
from michi.git.plain import config_get

if TYPE_CHECKING:
    from git import Repo


NO_PROMPT = {"GIT_TERMINAL_PROMPT": "0", "GIT_ASKPASS": "true", "SSH_ASKPASS": "true"}


@dataclass(frozen=True)
class Head:
    branch: str | None  # None when detached
    oid: str | None  # None when the branch is unborn


def open_repo(worktree: Path) -> Repo:
    import git

    try:
        return git.Repo(worktree)
    except (git.InvalidGitRepositoryError, git.NoSuchPathError):
        from michi.errors import NotARepository

        raise NotARepository(f"{worktree} is not a git repository", hint="run michi inside a clone") from None


def _exec(
    repo: Repo, *args: str, env: Mapping[str, str] | None = None, raw: bool = False, own_session: bool = False
) -> tuple[int, Any, str]:
    status, out, err = repo.git.execute(
        ["git", *args],
        with_extended_output=True,
        with_exceptions=False,
        env={**NO_PROMPT, **(env or {})},
        stdout_as_string=not raw,
        strip_newline_in_stdout=not raw,
        start_new_session=own_session,
    )
    return int(status), out, str(err)


def _must(repo: Repo, *args: str, env: Mapping[str, str] | None = None) -> str:
    status, out, err = _exec(repo, *args, env=env)
    if status != 0:
        raise lock_held(err) or GitFailed(f"git {args[0]} failed: {err.strip() or status}")
    return str(out)


# git's words when another git process holds (or a crashed one left) the lock file of a ref or the index.
_LOCK_FILE = re.compile(r"Unable to create '([^']+\.lock)': File exists")


def lock_held(err: str) -> GitFailed | None:
    """The error to report when git failed because a `.lock` file is in its way, else None: it is
    neither an unreachable remote nor changes in the work tree, and the fix is not to retry blindly."""
    found = _LOCK_FILE.search(err)
    if found is None:
        return None
    path = found.group(1)
    what = "the index" if path.endswith("/index.lock") else path.rsplit("/.git/", 1)[-1].removesuffix(".lock")
    return GitFailed(
        f"git cannot update {what}: {path} exists (another git process is using it, or one crashed "
        "and left it behind)",
        code="git_lock_held",
        hint=f"wait for the other git command to finish; if none is running, delete {path} and retry",
        path=path,
    )


def ref_oid(repo: Repo, ref: str) -> str | None:
    """Resolve a ref by reading loose and packed refs in Python (no git process)."""
    from git.refs.symbolic import SymbolicReference

    try:
        return str(SymbolicReference.dereference_recursive(repo, ref))
    except (ValueError, OSError):
        return None


def head(repo: Repo) -> Head:
    from git.refs.symbolic import SymbolicReference

    sha, target = SymbolicReference._get_ref_info(repo, "HEAD")
    if target is None:
        return Head(branch=None, oid=sha)
    branch = target.removeprefix("refs/heads/")
    return Head(branch=branch, oid=ref_oid(repo, target))


def remote_exists(repo: Repo, remote: str) -> bool:
    return bool(config_get(Path(repo.working_dir), f"remote.{remote}.url"))


def remote_default_branch(repo: Repo, remote: str) -> str | None:
    """What `git clone` recorded as the remote's default branch (refs/remotes/<remote>/HEAD)."""
    from git.refs.symbolic import SymbolicReference

    try:
        _sha, target = SymbolicReference._get_ref_info(repo, f"refs/remotes/{remote}/HEAD")
    except (ValueError, OSError):
        return None
    prefix = f"refs/remotes/{remote}/"
    return target.removeprefix(prefix) if target and target.startswith(prefix) else None


# What git says when it never got to talk to the remote: nothing can have landed.


def is_ancestor(repo: Repo, ancestor: str, descendant: str) -> bool:
    status, _out, _err = _exec(repo, "merge-base", "--is-ancestor", ancestor, descendant)
    return status == 0


def rev_list(repo: Repo, exclude: str, include: str) -> list[str]:
    """Commits reachable from `include` but not `exclude`, oldest first."""
    out = _must(repo, "rev-list", "--reverse", "--topo-order", include, f"^{exclude}")
    return [line for line in out.splitlines() if line]


def merge_base(repo: Repo, a: str, b: str) -> str | None:
    status, out, _err = _exec(repo, "merge-base", a, b)
    return str(out).strip() if status == 0 and out else None


def read_tree_update(
    repo: Repo,
    old: str,
    new: str,
    env: Mapping[str, str] | None = None,
    known: Mapping[str, tuple[int, str] | None] | None = None,
) -> str | None:
    """Move the user's index and work tree from `old` to `new` the way `git checkout` does: paths that do
    not differ keep every staged and unstaged change; git refuses (and changes nothing) when a path that
    differs has local changes. Returns git's refusal, or None on success."""
    if env is None:
        from michi.git.checkout import move_paths

        done, refused = move_paths(repo, old, new, known)  # only the few paths that differ (ADR 0014)
        if done:
            return refused
    status, _out, err = _exec(repo, "read-tree", "-m", "-u", old, new, env=env)
    if status != 0 and (held := lock_held(err)) is not None:
        raise held  # not a refusal: nothing in the work tree is in the way
    return None if status == 0 else (err.strip() or f"read-tree exited {status}")


def update_ref(repo: Repo, ref: str, new: str, old: str | None, message: str) -> None:
    """Compare-and-swap a ref (old None = must not exist yet)."""
    _must(repo, "update-ref", "-m", message, ref, new, old if old is not None else "0" * 40)


def messages_matching(repo: Repo, include: str, exclude: str | None, pattern: str) -> list[tuple[str, bytes]]:
    """(oid, raw message) of the commits reachable from `include` but not `exclude` whose message has a
    line matching the extended regex `pattern`; newest first. git filters in C: scanning a long history
    costs one process and returns only the matches."""
    args = ["log", "-z", "--format=%H%n%B", "--extended-regexp", f"--grep={pattern}", include]
    if exclude:
        args.append(f"^{exclude}")
    return _log(repo, args)


def commit_messages(repo: Repo, include: str, exclude: str | None) -> list[tuple[str, bytes]]:
    """(oid, raw message) of the commits reachable from `include` but not `exclude`, oldest first."""
    args = ["log", "-z", "--reverse", "--topo-order", "--format=%H%n%B", include]
    if exclude:
        args.append(f"^{exclude}")
    return _log(repo, args)


def _log(repo: Repo, args: list[str]) -> list[tuple[str, bytes]]:
    status, out, err = _exec(repo, *args, raw=True)
    if status != 0:
        raise GitFailed(f"git log failed: {err.strip() or status}")
    found = []
    for record in bytes(out).split(b"\0"):
        oid, _, message = record.strip(b"\n").partition(b"\n")
        if oid:
            found.append((oid.decode(), message))
    return found
