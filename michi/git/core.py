"""The repository: opening it, running git, refs, the user's index (ADR 0004, ADR 0010)."""

from __future__ import annotations

import os
import re
from collections.abc import Collection, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from michi.errors import GitFailed
from michi.git import prepared
from michi.git.files import read_ref, read_ref_file, refs_are_files
from michi.git.repo import NO_PROMPT as NO_PROMPT
from michi.git.repo import Repo, output
from michi.git.repo import open_repo as open_repo
from michi.plain import Plain

LITERAL = {"GIT_LITERAL_PATHSPECS": "1"}  # a path is a name, never a pattern

if TYPE_CHECKING:
    from michi.git.checkout import Moves


class Head(Plain):
    __slots__ = ("branch", "oid")

    def __init__(self, branch: str | None, oid: str | None) -> None:
        self.branch = branch  # None when detached
        self.oid = oid  # None when the branch is unborn


def _exec(
    repo: Repo, *args: str, env: Mapping[str, str] | None = None, raw: bool = False, own_session: bool = False
) -> tuple[int, Any, str]:
    status, out, err = repo.execute(list(args), env=env, own_session=own_session)
    return status, output(out, raw), str(output(err, False))


def _must(repo: Repo, *args: str, env: Mapping[str, str] | None = None) -> str:
    status, out, err = _exec(repo, *args, env=env)
    if status != 0:
        raise lock_held(err) or GitFailed(f"git {args[0]} failed: {err.strip() or status}")
    return str(out)


_BLOCK = 1 << 20  # the most `_must_records` reads at once (a pipe holds 64 KiB unless made larger)


def _must_records(repo: Repo, *args: str) -> Iterator[str]:
    """`_must`'s output (NUL-separated records: `-z`) as it comes, a block of whole records at a time: the
    caller works on one while git writes the next (ADR 0015: a cold list matches `ls-tree`'s 50,000
    records beside git's listing). What follows the last NUL is left out, as a pattern needing one
    leaves it. git failing raises as `_must` does, once its output is read."""
    proc = repo.start(list(args))
    out, rest = proc.stdout, b""
    assert out is not None and proc.stderr is not None
    try:
        while block := os.read(out.fileno(), _BLOCK):  # what the pipe holds: no waiting for more
            block = rest + block if rest else block
            cut = block.rfind(b"\0") + 1
            rest = block[cut:]
            if cut:  # a character's bytes hold no NUL: each block decodes as the whole output would
                yield block[:cut].decode("utf-8", "surrogateescape")
        err = str(output(proc.stderr.read(), False))
    finally:  # the caller stopped early, or failed: git ends (its output closed) and is reaped
        out.close()
        proc.stderr.close()
        status = proc.wait()
    if status != 0:
        raise lock_held(err) or GitFailed(f"git {args[0]} failed: {err.strip() or status}")


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
    """Resolve a ref by reading loose and packed refs (no git process); git itself answers only what
    the files cannot say (the reftable backend, a ref file git would not read)."""
    paths = repo.paths
    try:
        if refs_are_files(paths.common_dir):
            if ref == "HEAD":  # per work tree; the branch it names lives in the common dir
                text = read_ref_file(paths.git_dir, "HEAD")
                if text is not None and text.startswith("ref:"):
                    return read_ref(paths.common_dir, text[4:].strip())
                return text if text else None
            return read_ref(paths.common_dir, ref)
    except ValueError:
        pass
    status, out, _err = _exec(repo, "rev-parse", "--verify", "--quiet", ref)
    return str(out).strip() if status == 0 and out else None


def head(repo: Repo) -> Head:
    text = read_ref_file(repo.paths.git_dir, "HEAD")
    if text is not None and text.startswith("ref:"):
        target = text[4:].strip()
        return Head(branch=target.removeprefix("refs/heads/"), oid=ref_oid(repo, target))
    if text is None or not refs_are_files(repo.paths.common_dir):
        status, out, _err = _exec(repo, "symbolic-ref", "--quiet", "HEAD")
        if status == 0 and out:
            target = str(out).strip()
            return Head(branch=target.removeprefix("refs/heads/"), oid=ref_oid(repo, target))
    return Head(branch=None, oid=ref_oid(repo, "HEAD"))


def config_values(repo: Repo) -> dict[str, str]:
    """The settings a transaction reads (the identity, the remotes' URLs): once per command, and from
    the last command's answer while the config files are unchanged (`michi.git.settings`)."""
    if "config" not in repo.memo:
        from michi.git.settings import settings

        repo.memo["config"] = settings(repo.paths, lambda: _ask_config(repo))
    return dict(repo.memo["config"])


# The identity, the remotes' URLs, push URLs (`michi.git.remote.one_push_url`) and fetch refspecs, what
# decides whether the checkout move may stage the index (`michi.git.staged`), and whether the user chose
# checkout.workers. Changing it means changing `settings.CACHE_NAME`: a kept answer lacks the rest.
_SETTINGS = (
    r"^(user\.(name|email)|remote\..*\.(url|pushurl|fetch)|core\.(fsmonitor|splitindex|attributesfile)"
    r"|index\.version|feature\.manyfiles|filter\..+\.(smudge|process)|checkout\.workers)$"
)


def _ask_config(repo: Repo) -> dict[str, str]:
    """The settings, from one git process."""
    out = repo.execute(["config", "-z", "--get-regexp", _SETTINGS])[1]
    values: dict[str, str] = {}
    for record in out.decode("utf-8", "surrogateescape").split("\0"):
        key, _, value = record.partition("\n")
        if key.endswith((".fetch", ".url", ".pushurl")) and key in values:
            values[key] += "\n" + value  # every refspec and URL counts (one a line)
        elif key:
            values[key] = value  # the last one wins, as with `git config --get`
    return values


def fetch_refspecs(repo: Repo, remote: str) -> list[str]:
    """`remote.<remote>.fetch`, every value."""
    return [s for s in config_values(repo).get(f"remote.{remote}.fetch", "").split("\n") if s]


def remote_exists(repo: Repo, remote: str) -> bool:
    return bool(config_values(repo).get(f"remote.{remote}.url"))


def remote_names(repo: Repo) -> list[str]:
    """The repository's remotes (those with a URL), sorted."""
    found = (
        k[len("remote.") : -len(".url")]
        for k, v in config_values(repo).items()
        if v and k.startswith("remote.") and k.endswith(".url")
    )
    return sorted(name for name in found if name)


def remote_default_branch(repo: Repo, remote: str) -> str | None:
    """What `git clone` recorded as the remote's default branch (refs/remotes/<remote>/HEAD)."""
    prefix = f"refs/remotes/{remote}/"
    text = read_ref_file(repo.paths.common_dir, f"{prefix}HEAD")
    if text is None and not refs_are_files(repo.paths.common_dir):
        status, out, _err = _exec(repo, "symbolic-ref", "--quiet", f"{prefix}HEAD")
        text = f"ref: {out}" if status == 0 else None
    target = text[4:].strip() if text and text.startswith("ref:") else None
    return target.removeprefix(prefix) if target and target.startswith(prefix) else None


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


def fork_point(repo: Repo, ref: str, commit: str) -> str | None:
    """Where `commit`'s history left `ref`'s, counting every earlier tip of `ref` its reflog keeps (git's
    `merge-base --fork-point`, what `git pull --rebase` skips by): None when none of them is in that
    history, or `ref` keeps no reflog."""
    status, out, _err = _exec(repo, "merge-base", "--fork-point", ref, commit)
    return str(out).strip() if status == 0 and out else None


def read_tree_update(
    repo: Repo,
    old: str,
    new: str,
    env: Mapping[str, str] | None = None,
    known: Moves | None = None,
    own: Collection[str] = (),
) -> str | None:
    """Move the user's index and work tree from `old` to `new` the way `git checkout` does: paths that do
    not differ keep every staged and unstaged change; git refuses (and changes nothing) when a path that
    differs has local changes. Returns git's refusal, or None on success."""
    # Under sparse checkout only read-tree applies the patterns: `git restore` would write michi's files
    # outside them into the work tree (and clear their skip-worktree bit). The patterns live beside this
    # work tree's index: one stat, and every user without them keeps the fast path.
    if env is None and not (repo.paths.git_dir / "info" / "sparse-checkout").exists():
        from michi.git.checkout import move_paths

        done, refused = move_paths(repo, old, new, known, own)  # only the paths that differ (ADR 0015)
        if done:
            return refused
    status, _out, err = _exec(repo, *_parallel_checkout(repo), "read-tree", "-m", "-u", old, new, env=env)
    if status != 0 and (held := lock_held(err)) is not None:
        raise held  # not a refusal: nothing in the work tree is in the way
    return None if status == 0 else (err.strip() or f"read-tree exited {status}")


def _parallel_checkout(repo: Repo) -> tuple[str, ...]:
    """Files written by as many git workers as there are cores (git's own parallel checkout, for 100
    files or more), unless the user chose `checkout.workers`: a move of thousands of task files (an
    import, a first checkout) is bound by creating them, and a second worker halves that (ADR 0015)."""
    if "checkout.workers" in config_values(repo):
        return ()
    return ("-c", "checkout.workers=0")


def index_holds(repo: Repo, commit: str, paths: list[str]) -> bool:
    """Does the index hold `commit`'s version (or, where it has none, no entry) of every one of `paths`?"""
    if not paths:
        return True
    status, _out, _err = _exec(
        repo, "diff-index", "--cached", "--quiet", "--no-renames", commit, "--", *paths, env=LITERAL
    )
    return status == 0


def update_ref(repo: Repo, ref: str, new: str, old: str | None, message: str) -> None:
    """Compare-and-swap a ref (old None = must not exist yet); by the process `prepare_update_ref` started
    for this very update, if there is one (`michi.git.prepared`)."""
    was = old if old is not None else "0" * 40
    fed = prepared.run(repo, ("update-ref", ref, new, was, message), f"update {ref} {new} {was}\n".encode())
    if fed is None:
        _must(repo, "update-ref", "-m", message, ref, new, was)
        return
    status, _out, raw_err = fed
    if status != 0:
        err = str(output(raw_err, False))
        raise lock_held(err) or GitFailed(f"git update-ref failed: {err.strip() or status}")


def prepare_update_ref(repo: Repo, ref: str, new: str, old: str | None, message: str) -> None:
    """Start the `update-ref` that `update_ref(repo, ref, new, old, message)` will need, to wait for it
    (beside the push): then that step costs no git start-up. Fed nothing, it changes nothing."""
    was = old if old is not None else "0" * 40
    prepared.prepare(repo, ("update-ref", ref, new, was, message), ["update-ref", "-m", message, "--stdin"])


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
