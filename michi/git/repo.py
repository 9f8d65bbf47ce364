"""One repository as michi talks to it: git processes, one persistent `git cat-file --batch` for reading
objects, and loose objects written in Python (ADR 0010).

This replaces GitPython: importing it cost ~85-110 ms of CPU per process, and opening a `git.Repo` ran
`git version` and a second `cat-file` on top, in every command that changes tasks. What michi needs of
it is small: run git with a fixed locale, read objects, write blobs, trees and commits.
"""

from __future__ import annotations

import contextlib
import io
import os
import select
import subprocess
import threading
import weakref
import zlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import IO, Any

from michi import threads
from michi.errors import GitFailed
from michi.git.plain import child_env
from michi.objectid import object_id
from michi.repo import RepoPaths, find_repo

NO_PROMPT = {"GIT_TERMINAL_PROMPT": "0", "GIT_ASKPASS": "true", "SSH_ASKPASS": "true"}
# git's messages are parsed (rejected pushes, missing remote refs): always ask for them in English.
PLAIN_LOCALE = {"LANGUAGE": "C", "LC_ALL": "C"}
# Trees this process wrote or read, kept by oid (an object never changes): an import's next chunk edits
# the 259 trees the last one wrote, without asking `cat-file` for each (ADR 0015). Bounded: emptied when
# it would pass this many bytes (a flat 50,000-task `.tasks` tree is 3.5 MB).
TREE_CACHE_BYTES = 32 << 20
COMMIT_CACHE = 64  # commits kept by oid (`Repo._commits`): a command reads a handful
# Objects stored in a batch go to one pack from this many on (fewer are loose files, as git writes them).
PACK_FROM = 64
_AFTER_BATCH: list[Callable[[], None]] = []  # run once when the next batch ends (`after_next_batch`)


def after_next_batch(hook: Callable[[], None]) -> None:
    """Run `hook` once the batch being filled (or the next one) has ended, written or not: an import
    readies its next chunk in a thread only then, when git's work (journal, push, checkout) begins, so
    that thread never slows the commit's Python (ADR 0015)."""
    _AFTER_BATCH.append(hook)


def cancel_after_batch(hook: Callable[[], None]) -> None:
    """Forget `hook` if it has not run."""
    if hook in _AFTER_BATCH:
        _AFTER_BATCH.remove(hook)


# False in a served worker (ADR 0016): it exits right after its command, so a closed `cat-file` (which
# only reads, and ends when its stdin does) is left to end on its own rather than awaited.
AWAIT_CLOSE = True
_lingering: list[subprocess.Popen[bytes]] = []


def _close(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(OSError, ValueError):
        if proc.stdin is not None:
            proc.stdin.close()
    if not AWAIT_CLOSE:
        _lingering.append(proc)  # kept: a collected Popen still running would warn
        return
    if not _exited(proc, 5.0):
        proc.kill()
    proc.wait()


def _feed(stdin: IO[bytes] | None, oids: Sequence[str]) -> None:
    """Write `oids` to a `cat-file --batch` and close its input; a process that ended (the reader
    stopped early) is not an error here."""
    assert stdin is not None
    with contextlib.suppress(OSError, ValueError), stdin:
        stdin.write("".join(o + "\n" for o in oids).encode())


def _pass_over(stream: IO[bytes], count: int) -> None:
    """Read and drop `count` bytes of `stream`, a piece at a time."""
    while count > 0:
        piece = stream.read(min(count, 1 << 16))
        if not piece:
            raise GitFailed("git cat-file stopped mid-object")
        count -= len(piece)


def _exited(proc: subprocess.Popen[bytes], timeout: float) -> bool:
    """Has `proc` ended within `timeout`? Awaited on a pidfd, which wakes us the moment it exits;
    `Popen.wait(timeout)` polls with sleeps that double from 0.5 ms, a millisecond or two per close."""
    try:
        fd = os.pidfd_open(proc.pid)
    except (AttributeError, OSError):  # not Linux 5.3+, or already reaped
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            return False
        return True
    try:
        waiting = select.poll()  # not select(): a descriptor numbered over 1023 is out of its range
        waiting.register(fd, select.POLLIN)
        return bool(waiting.poll(timeout * 1000))
    finally:
        os.close(fd)


def _reap(proc: subprocess.Popen[bytes]) -> None:
    """A started process nobody asked for its answer: it only reads, so it may simply be ended."""
    if proc.returncode is None:
        with contextlib.suppress(OSError):
            proc.kill()
        proc.communicate()


class Repo:
    """A work tree and its git dirs (`michi.repo.RepoPaths`), with the git processes michi starts there."""

    def __init__(self, paths: RepoPaths) -> None:
        self.paths = paths
        self.working_dir = str(paths.worktree)
        self.objects_dir = paths.common_dir / "objects"
        self._cat_files: dict[str, subprocess.Popen[bytes]] = {}  # "--batch" / "--batch-check"
        self._finalizers: list[Any] = []
        # Answers that cannot change during one command (identity, remote URLs): asked once, before
        # the lock, never again inside it.
        self.memo: dict[str, Any] = {}
        # Checks started ahead of the step that needs them (`checkout.check_ahead`), by what they check.
        self.ahead: dict[Any, Any] = {}
        self._pending: dict[str, tuple[bytes, bytes]] | None = None  # oid -> (kind, data), in a batch
        self._trees: dict[str, bytes] = {}
        self._tree_bytes = 0
        # Commits read or written here, by oid: a transaction reads the same few (the remote tip, its
        # own) five or six times, each a round trip to `cat-file` otherwise. Objects never change.
        self._commits: dict[str, bytes] = {}
        self._diffs: dict[tuple[str, str], dict[str, tuple[int, str] | None]] = {}
        # Seconds a fetch or push may run before it is ended (`remote_timeout`; None: no limit).
        self.network_timeout: float | None = None
        self.apart = 0  # above 0: every git started runs in a session of its own (`sessions_apart`)

    @contextlib.contextmanager
    def sessions_apart(self) -> Iterator[None]:
        """Every git started meanwhile runs in a session (and process group) of its own, as `git push`
        does: for a step whose Ctrl-C michi defers (ADR 0004, an offline commit's move and branch update).
        A terminal sends SIGINT to its whole foreground group: a `restore` or `update-ref` cut half-way there
        failed the command with the index moved and the branch not, whatever michi decided."""
        self.apart += 1
        try:
            yield
        finally:
            self.apart -= 1

    def env(self, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        """os.environ for git, less what must never reach it (the lock token: `plain.SCRUBBED`)."""
        return child_env({**PLAIN_LOCALE, **NO_PROMPT, **(extra or {})})

    def execute(
        self,
        args: list[str],
        env: Mapping[str, str] | None = None,
        own_session: bool = False,
        data: bytes | None = None,
    ) -> tuple[int, bytes, bytes]:
        """`git <args>`; `data`, when given, on its stdin (written while its output is read: no pipe
        deadlock)."""
        proc = subprocess.run(
            ["git", *args],
            cwd=self.working_dir,
            env=self.env(env),
            stdin=subprocess.DEVNULL if data is None else None,
            input=data,
            capture_output=True,
            start_new_session=own_session or self.apart > 0,
            check=False,
        )
        return proc.returncode, proc.stdout, proc.stderr

    def start(
        self, args: list[str], env: Mapping[str, str] | None = None, fed: bool = False
    ) -> subprocess.Popen[bytes]:
        """`git <args>` started, not awaited: its output is read by whoever needs it (`communicate`).
        `fed`: its stdin is a pipe, for input given later (`michi.git.prepared`)."""
        proc = subprocess.Popen(
            ["git", *args],
            cwd=self.working_dir,
            env=self.env(env),
            stdin=subprocess.PIPE if fed else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=self.apart > 0,
        )
        self._finalizers.append(weakref.finalize(self, _reap, proc))
        return proc

    # -- objects ----------------------------------------------------------------------------------------
    def prestart(self) -> None:
        """Start the persistent `cat-file --batch` now, without waiting for it: it takes a few ms to start,
        which then overlaps whatever this process does before its first question. (`--batch-check`
        starts when asked: only `task add` asks it anything.)"""
        self._cat_file("--batch")

    def _cat_file(self, mode: str) -> subprocess.Popen[bytes]:
        # Always in a session of its own: the terminal's Ctrl-C never ends it half-way, inside a section
        # `sessions_apart` or not, so one process serves both (it ends when michi closes its stdin or dies).
        proc = self._cat_files.get(mode)
        if proc is None or proc.poll() is not None:
            proc = self._cat_files[mode] = subprocess.Popen(
                ["git", "cat-file", mode],
                cwd=self.working_dir,
                env=self.env(),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
            )
            self._finalizers.append(weakref.finalize(self, _close, proc))
        return proc

    def _ask(self, mode: str, spec: str) -> tuple[IO[bytes], list[bytes] | None]:
        """Ask the persistent `git cat-file <mode>` about `spec`: its stdout and the answer's header, None
        when git has no such object. cat-file reads one spec per line and answers a missing one with the
        spec and a word, so a path may not break that line (a newline, a final CR), and the answer is
        read from its end (a path may hold blanks, even end in " missing")."""
        line = spec.encode("utf-8", "surrogateescape")
        if b"\n" in line or line.endswith(b"\r"):
            status, out, _err = self.execute(["rev-parse", "--verify", "--quiet", spec])
            if status != 0:
                return io.BytesIO(), None
            line = out.strip()  # the object's id, which fits on a line
        proc = self._cat_file(mode)
        stdin: IO[bytes] = proc.stdin  # type: ignore[assignment]
        stdout: IO[bytes] = proc.stdout  # type: ignore[assignment]
        stdin.write(line + b"\n")
        stdin.flush()
        header = stdout.readline()
        if not header:
            raise GitFailed(f"git cat-file stopped while reading {spec}")
        if header.endswith((b" missing\n", b" ambiguous\n")):  # "<spec> missing": no object, no content
            return stdout, None
        return stdout, header.split()

    def cat(self, spec: str, limit: int | None = None) -> tuple[bytes, bytes] | None:
        """(type, content) of the object `spec` names (an oid, or `<tree>:<path>`), None when missing.
        `limit`: an object larger is cut to its first `limit + 1` bytes (its reader only needs to know it
        is too large), the rest passed over unkept: a hostile file of megabytes costs no memory."""
        known = self._known(spec)
        if known is not None:
            return known if limit is None else (known[0], known[1][: limit + 1])
        stdout, fields = self._ask("--batch", spec)
        if fields is None:
            return None
        size = int(fields[2])
        if limit is not None and size > limit:
            data = stdout.read(limit + 1)
            _pass_over(stdout, size - len(data) + 1)  # the rest, and the newline after it
            return fields[1], data
        data = stdout.read(size)
        stdout.read(1)  # the newline after the content
        if fields[1] == b"tree":
            self._keep_tree(fields[0].decode(), data)
        elif fields[1] == b"commit":
            self._keep_commit(fields[0].decode(), data)
        return fields[1], data

    def kind(self, spec: str) -> str | None:
        """The type of the object `spec` names ("blob", "tree", ...) without reading it, None when missing
        (a `.tasks` tree may hold 50,000 entries)."""
        known = self._known(spec)
        if known is not None:
            return known[0].decode()
        _, fields = self._ask("--batch-check", spec)
        return None if fields is None else fields[1].decode()

    def cached_tree(self, oid: str) -> bytes | None:
        """A tree's content when this process holds it (wrote or read it), else None: no git process."""
        known = self._known(oid)
        return known[1] if known is not None and known[0] == b"tree" else None

    def _known(self, spec: str) -> tuple[bytes, bytes] | None:
        if self._pending is not None and spec in self._pending:
            return self._pending[spec]
        tree = self._trees.get(spec)
        if tree is not None:
            return b"tree", tree
        commit = self._commits.get(spec)
        return None if commit is None else (b"commit", commit)

    def _keep_commit(self, oid: str, data: bytes) -> None:
        if len(self._commits) >= COMMIT_CACHE:
            self._commits.clear()
        self._commits[oid] = data

    def _keep_tree(self, oid: str, data: bytes) -> None:
        if oid in self._trees:
            return
        if self._tree_bytes + len(data) > TREE_CACHE_BYTES:
            self._trees.clear()
            self._tree_bytes = 0
        if len(data) <= TREE_CACHE_BYTES:
            self._trees[oid] = data
            self._tree_bytes += len(data)

    def read_object(self, oid: str, limit: int | None = None) -> bytes:
        found = self.cat(oid, limit)
        if found is None:
            raise GitFailed(f"git object {oid} is missing")
        return found[1]

    def cat_stream(self, oids: Sequence[str], limit: int | None = None) -> Iterator[tuple[str, bytes]]:
        """(oid, content) of many objects, in order, from one `git cat-file --batch --buffer` of their
        own, yielded as they arrive: a thread feeds the oids, git reads objects on one core while the
        caller parses on the other (50,000 on a cold read, ADR 0015). Raises GitFailed if one is
        missing. Stopping early ends the process. `limit`: as `cat`'s."""
        proc = subprocess.Popen(
            ["git", "cat-file", "--batch", "--buffer"],
            cwd=self.working_dir,
            env=self.env(),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            bufsize=1 << 16,
            start_new_session=self.apart > 0,
        )
        feed = threading.Thread(target=_feed, args=(proc.stdin, oids), daemon=True)
        threads.start(feed)
        out: IO[bytes] = proc.stdout  # type: ignore[assignment]
        try:
            for oid in oids:
                header = out.readline()
                if not header:
                    raise GitFailed(f"git cat-file stopped while reading {oid}")
                fields = header.split()
                if len(fields) != 3:
                    raise GitFailed(f"git object {oid} is missing")
                size = int(fields[2])
                if limit is not None and size > limit:
                    data = out.read(limit + 1)
                    _pass_over(out, size - len(data) + 1)
                    yield oid, data
                    continue
                yield oid, out.read(size + 1)[:-1]  # less the newline after the content
        finally:  # git's output closed first: a git still writing stops, then so does the feeder
            out.close()
            feed.join()
            proc.wait()

    @contextlib.contextmanager
    def batched(self) -> Iterator[None]:
        """Objects stored inside are written when it ends, all at once: one pack (no deltas) from
        PACK_FROM objects on, instead of a loose file each (an import chunk's 10,000 blobs, 259 trees and
        its commit: ADR 0015), else loose. They read back (`cat`, `kind`) from memory meanwhile. On an
        exception nothing is written: an object of a commit never made is not needed. Nested, the
        outermost batch writes."""
        if self._pending is not None:
            yield
            return
        self._pending = {}
        try:
            yield
            pending = self._pending
            self._pending = None
            if len(pending) >= PACK_FROM:
                from michi.git.pack import write_known

                write_known(self, {bytes.fromhex(oid): item for oid, item in pending.items()})
                for oid, (kind, data) in pending.items():
                    if kind == b"tree":
                        self._keep_tree(oid, data)
                    elif kind == b"commit":
                        self._keep_commit(oid, data)
            else:
                for kind, data in pending.values():
                    self.store(kind, data)
        finally:
            self._pending = None
            while _AFTER_BATCH:
                _AFTER_BATCH.pop()()

    def remember_diff(self, old: str, new: str, changes: dict[str, tuple[int, str] | None]) -> None:
        """`changes` is every file that differs from tree `old` to tree `new` (this process built `new`
        from `old` by them): `diff_trees` answers from it instead of running `diff-tree` (an import's
        next chunk brings its index over 10,000 paths, ADR 0015). The last few are kept."""
        if len(self._diffs) >= 4:
            self._diffs.clear()
        self._diffs[(old, new)] = changes

    def known_diff(self, old: str, new: str) -> dict[str, tuple[int, str] | None] | None:
        found = self._diffs.get((old, new))
        return None if found is None else dict(found)

    @property
    def batching(self) -> bool:
        return self._pending is not None

    def store(self, kind: bytes, data: bytes) -> str:
        """Write a loose object as git does (zlib, read-only file renamed into place); returns its oid.
        In a batch (`batched`) it is only kept until the batch writes it."""
        oid = object_id(kind, data)
        if self._pending is not None:
            self._pending.setdefault(oid, (kind, data))
            return oid
        if kind == b"tree":
            self._keep_tree(oid, data)
        raw = b"%s %d\0" % (kind, len(data)) + data
        folder = self.objects_dir / oid[:2]
        target = folder / oid[2:]
        if target.exists():
            if kind == b"commit":
                self._keep_commit(oid, data)
            return oid
        folder.mkdir(exist_ok=True)
        tmp = folder / f"tmp_obj_{os.getpid()}_{oid[2:10]}"
        with os.fdopen(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o444), "wb") as file:
            file.write(zlib.compress(raw, 1))
        os.replace(tmp, target)
        if kind == b"commit":  # once written: read back from here, it is on disk
            self._keep_commit(oid, data)
        return oid

    def close(self) -> None:
        for proc in self._cat_files.values():  # all told to end first: they exit side by side
            with contextlib.suppress(OSError, ValueError):
                if proc.stdin is not None:
                    proc.stdin.close()
        for finalizer in self._finalizers:
            finalizer()


_last: Repo | None = None


def open_repo(worktree: Path) -> Repo:
    """The repository at `worktree`. The read before the lock and the transaction share one: one
    `cat-file` process and one set of memoised answers per command."""
    global _last
    paths = find_repo(worktree)
    if _last is None or _last.paths != paths or not _last.objects_dir.is_dir():
        if _last is not None:
            _last.close()
        _last = Repo(paths)
    return _last


def forget() -> None:
    """End of a command: the next one (tests run many in one process) starts from a fresh `Repo`."""
    global _last
    if _last is not None:
        _last.close()
        _last = None


def output(out: bytes, raw: bool) -> Any:
    """git's output as GitPython gave it: bytes when raw, else text (surrogate escapes for odd bytes)
    without its one trailing newline."""
    if raw:
        return out
    text = out.decode("utf-8", "surrogateescape")
    return text[:-1] if text.endswith("\n") else text


def must(repo: Repo, *args: str) -> str:
    status, out, err = repo.execute(list(args))
    if status != 0:
        raise GitFailed(f"git {args[0]} failed: {output(err, False).strip() or status}")
    return str(output(out, False))
