"""All of michi's git access, as small named functions: one git action each, the repo passed in.

GitPython is imported lazily (ADR 0002): `import git` costs ~85 ms, which the pre-commit hook and the lock
commands must not pay. The few helpers the hook needs (`quick`) run the git binary directly for the same
reason (ADR 0005); everything else goes through GitPython.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from michi.errors import GitFailed


def quick(cwd: Path, *args: str, env: Mapping[str, str] | None = None) -> str:
    """Run one git command without GitPython; for the hot paths of the pre-commit hook only (ADR 0005)."""
    proc = subprocess.run(
        ["git", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env=None if env is None else {**os.environ, **env},
        check=False,
    )
    if proc.returncode != 0:
        raise GitFailed(f"git {args[0]} failed: {proc.stderr.strip() or proc.returncode}")
    return proc.stdout


def staged_paths(worktree: Path) -> list[str]:
    """Paths the index changes relative to HEAD (what `git commit` is about to record)."""
    out = quick(worktree, "diff", "--cached", "--name-only", "-z", "--no-renames")
    return [p for p in out.split("\0") if p]


# `.tasks/*.json` in any folder (as `_is_task_file`), anchored at the top even when run from a subfolder.
TASK_PATHSPEC = ":(top,glob)**/.tasks/*.json"


def staged_task_paths(worktree: Path) -> list[str]:
    """Task files the commit being made adds, changes or deletes (the pre-commit hook, ADR 0005)."""
    out = quick(worktree, "diff", "--cached", "--name-only", "-z", "--no-renames", "--", TASK_PATHSPEC)
    return [p for p in out.split("\0") if p]


def hooks_dir(worktree: Path) -> Path:
    """Where git looks for hooks here: honours core.hooksPath and linked work trees."""
    out = quick(worktree, "rev-parse", "--path-format=absolute", "--git-path", "hooks").strip()
    return Path(out)


def config_get(worktree: Path, key: str) -> str | None:
    proc = subprocess.run(["git", "config", "--get", key], cwd=worktree, capture_output=True, text=True)
    return proc.stdout.strip() if proc.returncode == 0 else None


def run(cwd: Path, args: Sequence[str]) -> str:
    """Escape hatch for code paths that are not yet behind a named function; prefer a named one."""
    return quick(cwd, *args)


# --- Reading refs and config from the files, for the read path's cache (issue 4, ADR 0008) -------------
# These start no git process and import no GitPython: `michi task list` answers from its cache when the
# ref it read last time still holds the same commit, and finding that out must cost file reads only.


def refs_are_files(common_dir: Path) -> bool:
    """False for the reftable backend (git 2.45+), whose refs `read_ref` cannot read."""
    return not (common_dir / "reftable").exists()


def _packed_refs(common_dir: Path) -> dict[str, str]:
    try:
        text = (common_dir / "packed-refs").read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    refs: dict[str, str] = {}
    for line in text.splitlines():
        if line and line[0] not in "#^":  # header, and the peeled oid of the annotated tag above
            oid, _, name = line.partition(" ")
            refs[name] = oid
    return refs


def _is_oid(text: str) -> bool:
    return len(text) in (40, 64) and all(c in "0123456789abcdef" for c in text)


def read_ref(common_dir: Path, refname: str) -> str | None:
    """The oid `refname` (e.g. `refs/heads/main`) points at, as git reads it: the loose ref file (following
    `ref: ` symbolic refs), else `packed-refs`. None when it does not exist; ValueError when the file is
    not a ref git could read (let git itself decide then)."""
    for _hop in range(5):  # git follows at most 5 levels of symbolic refs
        text = read_ref_file(common_dir, refname)
        if text is None:
            oid = _packed_refs(common_dir).get(refname)
            if oid is not None and not _is_oid(oid):
                raise ValueError(f"packed-refs: bad oid for {refname}")
            return oid
        if text.startswith("ref:"):
            refname = text[4:].strip()
            continue
        if not _is_oid(text):
            raise ValueError(f"{refname}: not a ref")
        return text
    raise ValueError(f"{refname}: symbolic refs nest too deep")


def read_ref_file(folder: Path, refname: str) -> str | None:
    """A loose ref file's raw content (`<oid>` or `ref: <target>`), or None when there is none."""
    try:
        return (folder / refname).read_text(encoding="utf-8").strip()
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        return None


def _config_files(git_dir: Path, common_dir: Path) -> list[Path]:
    """The files `git config --get` reads here (system, global, repository, work tree), in that order."""
    env = os.environ
    files: list[Path] = []
    if env.get("GIT_CONFIG_NOSYSTEM", "").lower() not in ("1", "true", "yes", "on"):
        files.append(Path(env.get("GIT_CONFIG_SYSTEM") or "/etc/gitconfig"))
    if "GIT_CONFIG_GLOBAL" in env:
        files.append(Path(env["GIT_CONFIG_GLOBAL"]))
    else:
        home = Path(env.get("HOME") or "~").expanduser()
        xdg = Path(env["XDG_CONFIG_HOME"]) if env.get("XDG_CONFIG_HOME") else home / ".config"
        files += [xdg / "git" / "config", home / ".gitconfig"]
    return [*files, common_dir / "config", git_dir / "config.worktree"]


def config_fingerprint(git_dir: Path, common_dir: Path) -> tuple[str, ...] | None:
    """Everything `git config` answers from here, as one comparable value: the text of each config file
    and the GIT_CONFIG* environment. None when an `[include]` or `[includeIf]` pulls in files this cannot
    see: then only git itself can say what the configuration is."""
    parts = [f"{k}={v}" for k, v in sorted(os.environ.items()) if k.startswith("GIT_CONFIG")]
    for path in _config_files(git_dir, common_dir):
        try:
            text = path.read_text(encoding="utf-8", errors="surrogateescape")
        except (FileNotFoundError, NotADirectoryError, PermissionError):
            text = "\0missing"
        if "include" in text.lower():
            return None
        parts += [str(path), text]
    return tuple(parts)


# --- GitPython-backed functions for the transaction (imported lazily, ADR 0002) -------------------------

EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
BLOB_MODE = 0o100644
TREE_MODE = 0o040000
NO_PROMPT = {"GIT_TERMINAL_PROMPT": "0", "GIT_ASKPASS": "true", "SSH_ASKPASS": "true"}

if TYPE_CHECKING:
    from git import Repo


@dataclass(frozen=True)
class Head:
    branch: str | None  # None when detached
    oid: str | None  # None when the branch is unborn


@dataclass(frozen=True)
class CommitMeta:
    tree: str
    parents: tuple[str, ...]
    headers: tuple[bytes, ...]  # author, committer, encoding...: every header but tree, parent, gpgsig
    message: bytes


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
        raise GitFailed(f"git {args[0]} failed: {err.strip() or status}")
    return str(out)


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
_NEVER_CONNECTED = (
    "does not appear to be a git repository",
    "could not resolve host",
    "connection refused",
    "connection timed out",
    "no route to host",
    "unable to access",
    "no such file or directory",
    "permission denied",
    "host key verification failed",
)


def _remote_failure(err: str, remote: str) -> GitFailed:
    from michi.errors import RemoteUnreachable

    first = next((line for line in err.splitlines() if line.strip()), err.strip())
    failure = RemoteUnreachable(
        f"cannot reach remote {remote!r}: {first}",
        hint="check the network and `git remote -v`; retry, or pass --offline to commit locally",
    )
    failure.connected = not any(marker in err.lower() for marker in _NEVER_CONNECTED)
    return failure


def fetch_branch(repo: Repo, remote: str, branch: str) -> str | None:
    """Update refs/remotes/<remote>/<branch> from the remote; None when the remote has no such branch."""
    tracking = f"refs/remotes/{remote}/{branch}"
    status, _out, err = _exec(
        repo,
        "fetch",
        "--quiet",
        "--no-tags",
        "--no-write-fetch-head",
        remote,
        f"+refs/heads/{branch}:{tracking}",
    )
    if status != 0:
        if "couldn't find remote ref" in err:
            return None
        raise _remote_failure(err, remote)
    return ref_oid(repo, tracking)


# Reasons a remote gives when a concurrent push won the race for the ref: contention, not refusal.
_REF_RACES = ("failed to update ref", "failed to lock", "incorrect old value provided", "cannot lock ref")


def _rejection_reasons(porcelain: str) -> list[str]:
    """The parenthesised reasons of `[remote rejected]` lines in `git push --porcelain` output, matched
    exactly, so a hook whose own message mentions a lock is not mistaken for contention."""
    reasons = []
    for line in porcelain.splitlines():
        if line.startswith("!") and "[remote rejected] (" in line:
            reason = line.split("[remote rejected] (", 1)[1].rsplit(")", 1)[0]
            reasons.append("cannot lock ref" if reason.startswith("cannot lock ref") else reason)
    return reasons


@dataclass(frozen=True)
class PushResult:
    ok: bool
    stale: bool  # rejected because the remote moved on: fetch and try again


def push(repo: Repo, remote: str, commit: str, branch: str, env: Mapping[str, str]) -> PushResult:
    """Fast-forward-only push of `commit` to the remote branch (the remote serializes machines)."""
    from michi.errors import RemoteRejected

    # Its own session: a Ctrl-C at the terminal must not kill git half-way through the push (ADR 0004).
    status, out, err = _exec(
        repo,
        "push",
        "--porcelain",
        "--quiet",
        remote,
        f"{commit}:refs/heads/{branch}",
        env=env,
        own_session=True,
    )
    if status == 0:
        return PushResult(ok=True, stale=False)
    text = f"{out}\n{err}"
    if "[rejected]" in text and ("non-fast-forward" in text or "fetch first" in text or "stale info" in text):
        return PushResult(ok=False, stale=True)
    if _rejection_reasons(str(out)) and all(r in _REF_RACES for r in _rejection_reasons(str(out))):
        return PushResult(ok=False, stale=True)  # another push held the remote's ref lock: retry
    if "[remote rejected]" in text or "[rejected]" in text:
        reason = next((ln.strip() for ln in text.splitlines() if "rejected]" in ln), err.strip())
        raise RemoteRejected(
            f"remote {remote!r} refused the push: {reason}",
            hint="the remote's hooks or branch protection refused michi's commit; ask its admin, then retry",
        )
    raise _remote_failure(err or str(out), remote)


def is_ancestor(repo: Repo, ancestor: str, descendant: str) -> bool:
    status, _out, _err = _exec(repo, "merge-base", "--is-ancestor", ancestor, descendant)
    return status == 0


def tree_of(repo: Repo, commit: str) -> str:
    return read_commit(repo, commit).tree


def _is_task_file(path: str) -> bool:
    parts = path.split("/")
    return len(parts) >= 2 and parts[-2] == ".tasks" and parts[-1].endswith(".json")


def ls_task_files(repo: Repo, tree: str) -> dict[str, str]:
    """Every `.tasks/*.json` file in `tree`: path -> blob oid (one git process)."""
    out = _must(repo, "ls-tree", "-r", "-z", "--full-tree", tree)
    files: dict[str, str] = {}
    for record in out.split("\0"):
        if not record:
            continue
        meta, _, path = record.partition("\t")
        if _is_task_file(path) and meta.split(" ")[1] == "blob":
            files[path] = meta.split(" ")[2]
    return files


def diff_trees(repo: Repo, old: str, new: str) -> dict[str, tuple[int, str] | None]:
    """Paths that differ between two trees or commits: path -> (mode, blob oid), None when deleted."""
    out = _must(repo, "diff-tree", "-r", "-z", "--no-renames", old, new)
    fields = out.split("\0")
    changes: dict[str, tuple[int, str] | None] = {}
    for meta, path in zip(fields[0::2], fields[1::2], strict=False):
        if not meta.startswith(":"):
            continue
        _old_mode, new_mode, _old_oid, new_oid, status = meta[1:].split(" ")
        changes[path] = None if status == "D" else (int(new_mode, 8), new_oid)
    return changes


def diff_task_files(repo: Repo, old_tree: str, new_tree: str) -> dict[str, str | None]:
    return {
        p: (None if c is None else c[1])
        for p, c in diff_trees(repo, old_tree, new_tree).items()
        if _is_task_file(p)
    }


def read_blob(repo: Repo, oid: str) -> bytes:
    data: bytes = repo.odb.stream(bytes.fromhex(oid)).read()
    return data


_loose_dbs: dict[str, Any] = {}


def _store(repo: Repo, kind: bytes, data: bytes) -> str:
    """Write a loose object with gitdb in Python. GitPython's own `odb.store` runs `git hash-object`
    once per object, which is four processes inside the lock for every transaction (ADR 0004)."""
    from io import BytesIO

    from gitdb import IStream, LooseObjectDB

    root = repo.odb.root_path()
    db = _loose_dbs.get(root)
    if db is None:
        db = _loose_dbs[root] = LooseObjectDB(root)
    istream = db.store(IStream(kind, len(data), BytesIO(data)))
    return str(istream.hexsha.decode() if isinstance(istream.hexsha, bytes) else istream.hexsha)


def write_blob(repo: Repo, data: bytes) -> str:
    """Write a blob object in Python (no git process inside the lock)."""
    return _store(repo, b"blob", data)


def _raw_entries(repo: Repo, tree: str | None) -> dict[bytes, bytes]:
    """A tree object's entries as raw bytes, keyed by name. Parsing `<mode> <name>\\0<sha>` with
    bytes.index is ~10x faster than GitPython's per-entry decoding, which matters for a `.tasks`
    folder of 10,000 files that every transaction rewrites (issue 4's benchmark)."""
    if tree is None or tree == EMPTY_TREE:
        return {}
    raw: bytes = repo.odb.stream(bytes.fromhex(tree)).read()
    entries: dict[bytes, bytes] = {}
    i, size = 0, len(raw)
    while i < size:
        nul = raw.index(b"\0", i)
        name = raw[raw.index(b" ", i) + 1 : nul]
        entries[name] = raw[i : nul + 21]
        i = nul + 21
    return entries


def _entry(name: bytes, mode: int, oid: str) -> bytes:
    return b"%o %s\0" % (mode, name) + bytes.fromhex(oid)


def _entry_mode_oid(entry: bytes) -> tuple[int, str]:
    return int(entry[: entry.index(b" ")], 8), entry[-20:].hex()


def _write_raw_tree(repo: Repo, entries: dict[bytes, bytes]) -> str:
    # git sorts tree entries by name, with a sub-tree's name compared as if it ended in '/'.
    def key(item: tuple[bytes, bytes]) -> bytes:
        return item[0] + b"/" if item[1].startswith(b"40000 ") else item[0]

    return _store(repo, b"tree", b"".join(e for _n, e in sorted(entries.items(), key=key)))


def edit_tree(repo: Repo, tree: str | None, changes: Mapping[str, tuple[int, str] | None]) -> str:
    """A new tree: `tree` with each path set to (mode, blob oid) or removed (None). Empty folders vanish."""
    entries = _raw_entries(repo, tree)
    nested: dict[bytes, dict[str, tuple[int, str] | None]] = {}
    set_here: set[bytes] = set()
    for path, change in changes.items():
        first, sep, rest = path.partition("/")
        # Paths come from git as str with surrogate escapes; this gives back git's exact bytes.
        name = first.encode("utf-8", "surrogateescape")
        if sep:
            nested.setdefault(name, {})[rest] = change
        elif change is None:
            entries.pop(name, None)
        else:
            entries[name] = _entry(name, change[0], change[1])
            set_here.add(name)
    for name, sub_changes in nested.items():
        if name in set_here:
            continue  # a folder that became a file: the file replaces it, and its contents go with it
        current = entries.get(name)
        sub_tree = None
        if current is not None:
            mode, oid = _entry_mode_oid(current)
            sub_tree = oid if mode == TREE_MODE else None
        new_sub = edit_tree(repo, sub_tree, sub_changes)
        if new_sub == EMPTY_TREE:
            entries.pop(name, None)
        else:
            entries[name] = _entry(name, TREE_MODE, new_sub)
    return _write_raw_tree(repo, entries) if entries else EMPTY_TREE


def read_path(repo: Repo, tree: str, path: str) -> bytes | None:
    """A file's content at `path` in `tree`, through the persistent `cat-file --batch` (no tree parsing)."""
    try:
        _oid, kind, _size, stream = repo.git.stream_object_data(f"{tree}:{path}")
    except ValueError:  # cat-file answered "missing"
        return None
    data: bytes = stream.read()
    return data if kind in (b"blob", "blob") else None  # GitPython has returned both over versions


def read_commit(repo: Repo, oid: str) -> CommitMeta:
    raw: bytes = repo.odb.stream(bytes.fromhex(oid)).read()
    header, _, message = raw.partition(b"\n\n")
    tree = ""
    parents: list[str] = []
    keep: list[bytes] = []
    lines = header.split(b"\n")
    skipping = False
    for line in lines:
        if line.startswith(b" "):  # continuation of a multi-line header (gpgsig, mergetag)
            if not skipping:
                keep[-1] += b"\n" + line
            continue
        key = line.split(b" ", 1)[0]
        skipping = key in {b"gpgsig", b"gpgsig-sha256", b"mergetag"}
        if key == b"tree":
            tree = line[5:].decode()
        elif key == b"parent":
            parents.append(line[7:].decode())
        elif not skipping:
            keep.append(line)
    return CommitMeta(tree=tree, parents=tuple(parents), headers=tuple(keep), message=message)


def signature(repo: Repo, role: str) -> bytes:
    """`Name <email> <epoch> <tz>` as git writes it, honouring GIT_AUTHOR_*/GIT_COMMITTER_* and config."""
    import time

    import git

    reader = repo.config_reader()
    actor = git.Actor.author(reader) if role == "author" else git.Actor.committer(reader)
    offset = -time.timezone if not time.localtime().tm_isdst else -time.altzone
    sign = "+" if offset >= 0 else "-"
    tz = f"{sign}{abs(offset) // 3600:02d}{abs(offset) % 3600 // 60:02d}"
    return f"{actor.name} <{actor.email}> {int(time.time())} {tz}".encode()


def write_commit(
    repo: Repo, tree: str, parents: Sequence[str], headers: Sequence[bytes], message: bytes
) -> str:
    lines = [b"tree " + tree.encode(), *(b"parent " + p.encode() for p in parents), *headers]
    return _store(repo, b"commit", b"\n".join(lines) + b"\n\n" + message)


def rev_list(repo: Repo, exclude: str, include: str) -> list[str]:
    """Commits reachable from `include` but not `exclude`, oldest first."""
    out = _must(repo, "rev-list", "--reverse", "--topo-order", include, f"^{exclude}")
    return [line for line in out.splitlines() if line]


def read_tree_update(repo: Repo, old: str, new: str, env: Mapping[str, str] | None = None) -> str | None:
    """Move the user's index and work tree from `old` to `new` the way `git checkout` does: paths that do
    not differ keep every staged and unstaged change; git refuses (and changes nothing) when a path that
    differs has local changes. Returns git's refusal, or None on success."""
    status, _out, err = _exec(repo, "read-tree", "-m", "-u", old, new, env=env)
    return None if status == 0 else (err.strip() or f"read-tree exited {status}")


def update_ref(repo: Repo, ref: str, new: str, old: str | None, message: str) -> None:
    """Compare-and-swap a ref (old None = must not exist yet)."""
    _must(repo, "update-ref", "-m", message, ref, new, old if old is not None else "0" * 40)


def operation_in_progress(git_dir: Path) -> str | None:
    """A rebase, merge, cherry-pick or revert the user has started and not finished, if any."""
    for name, what in (
        ("rebase-merge", "a rebase"),
        ("rebase-apply", "a rebase or am"),
        ("MERGE_HEAD", "a merge"),
        ("CHERRY_PICK_HEAD", "a cherry-pick"),
        ("REVERT_HEAD", "a revert"),
    ):
        if (git_dir / name).exists():
            return what
    return None


def merge_base(repo: Repo, a: str, b: str) -> str | None:
    status, out, _err = _exec(repo, "merge-base", a, b)
    return str(out).strip() if status == 0 and out else None


def warm_up(repo: Repo, commit: str | None) -> None:
    """Pay the one-time costs (object-database imports, starting the persistent `git cat-file --batch`)
    before the lock is taken, so the critical section only does the work itself (ADR 0002)."""
    import git.objects.fun  # noqa: F401
    from gitdb import LooseObjectDB  # noqa: F401

    if commit is not None:
        read_commit(repo, commit)
