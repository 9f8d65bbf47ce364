"""The remote lock's git actions (ADR 0009): read the lock ref on the remote, write a record commit,
compare-and-swap the ref with a push. Plain subprocesses, no GitPython: `michi lock ... --remote` stays
as lean as the local lock (ADR 0002).

Every network call takes a timeout: a hung connection must not outlive the lease it is meant to renew.
"""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import time
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from michi.atomic import write_atomic
from michi.errors import GitFailed, RemoteRejected, RemoteUnreachable
from michi.git.core import NO_PROMPT
from michi.git.plain import child_env, run_ended
from michi.git.remote import _REF_RACES, _rejection_reasons, _remote_failure

RECORD_FILE = "owner.json"
# Record commits are michi's, not the user's: a fixed identity, so a clone without user.name still works.
_IDENTITY = {
    "GIT_AUTHOR_NAME": "michi lock",
    "GIT_AUTHOR_EMAIL": "michi-lock@localhost",
    "GIT_COMMITTER_NAME": "michi lock",
    "GIT_COMMITTER_EMAIL": "michi-lock@localhost",
}


def _git(
    cwd: Path,
    *args: str,
    stdin: str | None = None,
    env: Mapping[str, str] | None = None,
    timeout: float | None = None,
    remote: str = "",
) -> subprocess.CompletedProcess[str]:
    try:
        # Its own session: Ctrl-C at the terminal must not kill a compare-and-swap push half-way; past the
        # timeout it is ended with what it started (a stuck upload-pack must not outlive it).
        status, out, err = run_ended(
            ["git", *args],
            cwd=cwd,
            env=child_env({**NO_PROMPT, **(env or {})}),
            timeout=timeout,
            data=None if stdin is None else stdin.encode(),
        )
        return subprocess.CompletedProcess(
            args, status, out.decode(errors="replace"), err.decode(errors="replace")
        )
    except subprocess.TimeoutExpired:
        # A push may have landed: callers re-read the ref to find out (ADR 0009).
        raise RemoteUnreachable(
            f"remote {remote or '?'!r} did not answer within {timeout:.1f}s",
            hint="check the network and `git remote -v`; the lock's lease decides what happens next",
        ) from None


def _unreachable(err: str, remote: str) -> GitFailed:
    failure = _remote_failure(err, remote)
    failure.hint = "check the network and `git remote -v`; a lock that is not renewed expires after its TTL"
    return failure


def remote_oid(cwd: Path, remote: str, ref: str, timeout: float | None = None) -> str | None:
    """The object the ref names on the remote now (`git ls-remote`); None when the ref does not exist."""
    proc = _git(cwd, "ls-remote", "--exit-code", remote, ref, timeout=timeout, remote=remote)
    if proc.returncode == 2:
        return None
    if proc.returncode != 0:
        raise _unreachable(proc.stderr, remote)
    for line in proc.stdout.splitlines():
        oid, _, name = line.partition("\t")
        if name == ref:
            return oid
    return None


def fetch_ref_objects(cwd: Path, remote: str, ref: str, timeout: float | None = None) -> None:
    """Bring the ref's objects into the local object store without writing any local ref: many michi
    processes of one clone read the lock at once, and a shared tracking ref would make them fight over
    git's ref lock. The objects stay unreferenced; git's gc collects them."""
    proc = _git(
        cwd,
        "fetch",
        "--quiet",
        "--no-tags",
        "--no-write-fetch-head",
        "--no-recurse-submodules",
        remote,
        ref,
        timeout=timeout,
        remote=remote,
    )
    if proc.returncode != 0:
        if "couldn't find remote ref" in proc.stderr:
            return  # released and deleted meanwhile: the caller re-reads
        raise _unreachable(proc.stderr, remote)


def read_record(cwd: Path, oid: str, limit: int) -> bytes | None:
    """The record file in commit `oid`, at most `limit` + 1 bytes of it (anyone who can push writes the
    ref: a record of gigabytes is not read whole, and the caller finds it too large); None when this
    clone does not have the commit (fetch it)."""
    proc = subprocess.Popen(
        ["git", "cat-file", "--batch"],
        cwd=cwd,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=child_env(),
    )
    assert proc.stdin is not None and proc.stdout is not None
    try:
        proc.stdin.write(f"{oid}:{RECORD_FILE}\n".encode())
        proc.stdin.close()
        header = proc.stdout.readline().split()  # "<oid> blob <size>", or "<name> missing"
        if len(header) != 3 or header[1] != b"blob":
            return None
        return proc.stdout.read(min(int(header[2]), limit + 1))
    except (OSError, ValueError):
        return None
    finally:
        proc.kill()  # a large record's rest is not waited for
        proc.wait()


def has_object(cwd: Path, oid: str) -> bool:
    """Whether this clone has object `oid` (of any kind)."""
    return _local(cwd, "cat-file", "-e", oid) is not None


def _local(cwd: Path, *args: str) -> bytes | None:
    """`git <args>` in this clone, its output as bytes (a record may hold anything); None when it fails.
    The environment is a git process's as everywhere in michi (`child_env`: no lock token, the caller's
    relative git places read from where it acts)."""
    proc = subprocess.run(["git", *args], cwd=cwd, capture_output=True, env=child_env(), check=False)
    return proc.stdout if proc.returncode == 0 else None


def write_record(cwd: Path, common_dir: Path, data: str, message: str) -> str:
    """A parentless commit holding `owner.json`: old records are unreachable once the ref moves on.

    Written as three loose objects by Python (about 1 ms) rather than by three git processes (about
    30 ms, twice per acquire+release); plumbing only where the object store is not plainly ours."""
    objects = common_dir / "objects"
    algorithm = _object_format(common_dir)
    if algorithm is None or not objects.is_dir() or "GIT_OBJECT_DIRECTORY" in os.environ:
        blob = _must(cwd, "hash-object", "-w", "--stdin", stdin=data)
        tree = _must(cwd, "mktree", stdin=f"100644 blob {blob}\t{RECORD_FILE}\n")
        return _must(cwd, "commit-tree", tree, "-m", message, env=_IDENTITY)
    blob = _loose(objects, algorithm, b"blob", data.encode())
    tree = _loose(objects, algorithm, b"tree", f"100644 {RECORD_FILE}\0".encode() + bytes.fromhex(blob))
    stamp = f"{_IDENTITY['GIT_COMMITTER_NAME']} <{_IDENTITY['GIT_COMMITTER_EMAIL']}> {int(time.time())} +0000"
    body = f"tree {tree}\nauthor {stamp}\ncommitter {stamp}\n\n{message.rstrip()}\n"
    return _loose(objects, algorithm, b"commit", body.encode())


def _object_format(common_dir: Path) -> str | None:
    """sha1 or sha256 as the repository's config says; None when it cannot be told for sure."""
    try:
        config = (common_dir / "config").read_text(encoding="utf-8").lower()
    except (OSError, UnicodeDecodeError):
        return None
    if "objectformat" not in config:
        return "sha1"
    found = re.search(r"^\s*objectformat\s*=\s*(sha1|sha256)\s*$", config, re.MULTILINE)
    return found.group(1) if found else None


def _loose(objects: Path, algorithm: str, kind: bytes, content: bytes) -> str:
    raw = kind + b" " + str(len(content)).encode() + b"\0" + content
    oid = hashlib.new(algorithm, raw).hexdigest()
    path = objects / oid[:2] / oid[2:]
    if not path.exists():
        path.parent.mkdir(exist_ok=True)
        write_atomic(path, zlib.compress(raw), mode=0o444)
    return oid


def _must(cwd: Path, *args: str, stdin: str | None = None, env: Mapping[str, str] | None = None) -> str:
    proc = _git(cwd, *args, stdin=stdin, env=env)
    if proc.returncode != 0:
        raise GitFailed(f"git {args[0]} failed: {proc.stderr.strip() or proc.returncode}")
    return proc.stdout.strip()


@dataclass(frozen=True)
class Swap:
    ok: bool  # False: the ref was not `expected` any more (someone else's push won); re-read it


def cas_push(
    cwd: Path, remote: str, ref: str, new: str, expected: str | None, timeout: float | None = None
) -> Swap:
    """Move the remote's `ref` to `new` only if it still names `expected` (None: only if it does not
    exist). The remote checks the old value under its own ref lock, so of any number of racing pushes
    exactly one wins (ADR 0009). `--no-verify`: a local pre-push hook (tests, linters) has no say over
    a lock record."""
    lease = f"--force-with-lease={ref}:{expected or ''}"
    proc = _git(
        cwd,
        "push",
        "--porcelain",
        "--quiet",
        "--no-verify",
        "--no-recurse-submodules",
        lease,
        remote,
        f"{new}:{ref}",
        timeout=timeout,
        remote=remote,
    )
    if proc.returncode == 0:
        return Swap(ok=True)
    text = f"{proc.stdout}\n{proc.stderr}"
    if "[rejected] (stale info)" in text:
        return Swap(ok=False)
    reasons = _rejection_reasons(proc.stdout)
    if reasons and all(r in _REF_RACES for r in reasons):
        return Swap(ok=False)
    if "[remote rejected]" in text or "[rejected]" in text:
        reason = next((ln.strip() for ln in text.splitlines() if "rejected]" in ln), proc.stderr.strip())
        raise RemoteRejected(
            f"remote {remote!r} refused the lock record: {reason}",
            hint=f"the remote must accept pushes to {ref} (its hooks or ref permissions refused it); "
            "ask its admin, or use the local lock (without --remote)",
        )
    raise _unreachable(proc.stderr or proc.stdout, remote)


def one_push_url(cwd: Path, remote: str) -> None:
    """Refuse a remote with more than one push URL (`remote.one_push_url`): git pushes a lock record to
    each in turn, and "exactly one wins" holds on one repository only (ADR 0009)."""
    from michi.git.remote import refuse_mirrors

    found: dict[str, list[str]] = {}
    listed = _local(cwd, "config", "--get-regexp", rf"^remote\.{re.escape(remote)}\.(push)?url$")
    for line in (listed or b"").decode("utf-8", "surrogateescape").splitlines():
        name, _, value = line.partition(" ")
        found.setdefault(name.lower(), []).append(value)
    key = (
        f"remote.{remote}.pushurl"
        if found.get(f"remote.{remote}.pushurl".lower())
        else f"remote.{remote}.url"
    )
    refuse_mirrors(remote, key, found.get(key.lower(), []))


def remote_url(cwd: Path, remote: str) -> str | None:
    """The URL the remote name stands for, to key what this clone has observed of that remote's lock."""
    url = _local(cwd, "config", "--get", f"remote.{remote}.url")
    return url.decode("utf-8", "surrogateescape").strip() if url is not None else None
