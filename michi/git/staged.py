"""A checkout move whose index git writes beside the push (ADR 0015).

git rewrites the whole index file on every change: at 50,000 entries the `git restore` that moves the
checkout after the push spends ~40 ms reading, hashing and writing 6 MB, inside the lock. Here that same
`git restore` runs while the push runs, in a staging work tree in `.git/michi/stage/`, on a copy of the
index (`GIT_INDEX_FILE`): git writes the new files (its filters and attributes applied) and an index
naming them, and never touches the user's. After the push has landed and the move's checks passed, the
files are renamed into the work tree (a rename changes a file's ctime and nothing else) and the staged
index, its moved entries given their files' new ctime (`michi.git.indexfile`), is installed the way git
installs one: written to `index.lock`, taken exclusively, and renamed over the index, only if the index
is still the one the staging started from. ~10 ms of hashing instead of git's read, merge and write.

Whenever anything is not as expected (the index changed meanwhile, an entry cannot be found or is not the
staged file, a file is in the way) and nothing was moved yet, the move is left to `git restore` as
before. Never used with a split index, an fsmonitor (the staging tree is not the one it watches), a sparse
checkout or another index file (`GIT_INDEX_FILE`), or for a path that is not a plain file in both commits.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import mmap
import os
import shutil
import stat
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import IO, TYPE_CHECKING

from michi import leftovers, threads
from michi.errors import MichiError
from michi.git import heldindex, indexfile, indexwalk, objects, prepared, splice
from michi.pids import exists

if TYPE_CHECKING:
    import subprocess

    from michi.git.indexwalk import Entries, IndexRead
    from michi.git.repo import Repo

_FILE_MODES = (0o100644, 0o100755)
_SETTLED_NS = 20_000_000  # the kernel's file-time clock ticks at most this coarsely (`checkout._SETTLED_NS`)
_SERIAL = itertools.count()
_POPULATE = getattr(mmap, "MAP_POPULATE", 0)  # the pages mapped now, beside the push, not when read
HELD = heldindex.HELD  # in a staging folder: what names the `index.lock` it holds (`heldindex.IndexLock`)
_folder, _own_folder, _all_are = heldindex.folder, heldindex.own_folder, heldindex.all_are
PathEntry = tuple[int, str] | None
_Moves = Mapping[str, tuple[PathEntry, PathEntry]]
_Found = tuple[list[indexfile.Moved], "bytearray | mmap.mmap", list[int], indexfile.Prefix]


def _index_key(st: os.stat_result) -> tuple[int, ...]:
    return (st.st_ino, st.st_dev, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


class Staged:
    """The move from `old` to `new` by `moves` (only paths that differ), prepared now; `install` finishes
    it after the push, `drop` forgets it."""

    def __init__(
        self,
        repo: Repo,
        new: str,
        moves: _Moves,
        restore: list[str],
        env: Mapping[str, str],
        old: str | None = None,
        only_spliced: bool = False,
        index: IndexRead | None = None,
    ) -> None:
        """`old`: the commit the move starts from; with it the index is spliced where it can be (only the
        moved entries written by git, `michi.git.splice`), else git writes a copy of all of it, unless
        `only_spliced` (then `Staged.spliced` is False and nothing was started). `index`: the index file's
        stat data and bytes, when just read (used if it is still that file)."""
        assert repo.working_dir is not None
        self.repo = repo
        self.top = Path(repo.working_dir)
        self.git_dir = repo.paths.git_dir
        self.where = _folder(self.git_dir) / f"{os.getpid()}.{next(_SERIAL)}"
        self.width = len(new) // 2
        self.written = sorted((p, n[1]) for p, (_o, n) in moves.items() if n is not None)
        self.deleted = sorted(p for p, (_o, n) in moves.items() if n is None)
        self.moves = moves
        self.old = old
        self.plan: splice.Plan | None = None  # where the moved entries go, when they are spliced in
        self.placed: list[int] | None = None  # and where the splice put them
        self.spliced = False
        # The spliced index synced beside the push only on the bet that the push lands, as a copy is made
        # (`only_spliced` is where pushes are being refused: a sync a round would be disk time wasted).
        self.sync = not only_spliced
        self.proc: subprocess.Popen[bytes] | None = None
        self.reader: threading.Thread | None = None
        self.found: _Found | None = None
        self.changed = False  # the index was written after it was copied
        self.dropped = threading.Event()  # nobody will install it: the reader stops at its next step
        try:
            self._start(repo, restore, env, only_spliced, index)
        except BaseException:
            self.drop()
            raise

    def _start(
        self,
        repo: Repo,
        restore: list[str],
        env: Mapping[str, str],
        only_spliced: bool,
        index: IndexRead | None,
    ) -> None:
        if not _own_folder(self.git_dir):
            raise NotADirectoryError(f"{_folder(self.git_dir)} is not a folder of michi's")
        clear_dead(self.git_dir)
        if self.old is not None and self.written:
            found, before, walked = _index(self.git_dir, index)
            self.plan = self._plan(before, walked) if len(before) == found.st_size else None
            if self.plan is not None:
                self.spliced = True
                self.index_was = _index_key(found)
                self.index_mode = stat.S_IMODE(found.st_mode)
                (self.where / "wt").mkdir(parents=True)
                # git starts from an index of its own with nothing in it, and writes the moved entries
                env = {**env, "GIT_INDEX_FILE": str(self.where / "small")}
                self.proc = repo.start([*self._staging(), *restore], env=env, fed=True)
                return
        if only_spliced:
            return
        (self.where / "wt").mkdir(parents=True)
        # A copy, not a link: a link would give the user's index a new ctime, which the move's first
        # check (`checkout._Ahead`) would take for a write. git replaces an index, never writes into it,
        # so the file opened here is the one copied, whole.
        with open(self.git_dir / "index", "rb") as source, open(self.where / "index", "xb") as copy:
            found = os.fstat(source.fileno())
            _copy(source.fileno(), copy.fileno(), found.st_size)
        self.index_was = _index_key(found)
        self.index_mode = stat.S_IMODE(found.st_mode)
        self._attributes()
        env = {**env, "GIT_INDEX_FILE": str(self.where / "index")}
        self.proc = repo.start([*self._staging(), *restore], env=env, fed=True)

    def _staging(self) -> list[str]:
        """git's options for writing the staging tree (and an index of its own) instead of the user's."""
        return [
            "-c",
            f"core.hooksPath={os.devnull}",
            "-c",
            "core.splitIndex=false",
            "-c",
            "core.untrackedCache=keep",  # else git would stamp the cache with the staging tree's place
            "-c",
            "core.fsmonitor=false",  # its watcher watches the work tree, not the staging tree
            "--work-tree",
            str(self.where / "wt"),
        ]

    def pathspecs(self, specs: list[str]) -> list[str]:
        """What git is to be told to write, for the move's pathspecs `specs`: a spliced move's git writes
        only the files written (the others' entries are removed from the index here)."""
        return [p for p, _oid in self.written] if self.spliced else specs

    def feed(self, data: bytes) -> None:
        """Hand git its paths (`data`, `pathspecs` as `--pathspec-from-file` reads them)."""
        stdin: IO[bytes] | None = self.proc.stdin if self.proc else None
        assert stdin is not None
        try:
            stdin.write(data)
        finally:
            stdin.close()  # git starts once its input ends
            assert self.proc is not None
            self.proc.stdin = None  # closed here: `communicate` must not flush it
        # Its result is read as soon as git is done, while the push still runs (this process only waits
        # for the push then): the lock's holder finds it ready.
        self.reader = threading.Thread(target=self._read, name="michi-staged-index", daemon=True)
        threads.start(self.reader)

    def _read(self) -> None:
        """Wait for git, then read what it staged and find the moved entries in its index."""
        proc = self.proc  # `drop` may forget it meanwhile
        assert proc is not None
        proc.communicate()
        if proc.returncode != 0 or self.dropped.is_set():
            return
        stage = self.where / "wt"
        data: bytearray | mmap.mmap
        try:
            staged = [indexfile.Moved(p, oid, os.lstat(stage / p)) for p, oid in self.written]
            if self.spliced:
                made = self._splice()
                if made is None:
                    return
                data, first = made
            else:
                with open(self.where / "index", "rb") as source:
                    data = bytearray(os.fstat(source.fileno()).st_size)
                    if source.readinto(data) != len(data):
                        return
                first = len(data)
        except OSError:
            return
        if self.dropped.is_set():
            return
        where = indexfile.locate(data, staged) if not self.spliced else self._where(data, staged)
        if where is not None:  # the checksum of what the move leaves as it is, made here, not under the lock
            found = (staged, data, where, indexfile.Prefix(data, [*where, first], self.width))
            if not self.dropped.is_set():
                self.found = found

    def _where(self, data: bytearray | mmap.mmap, staged: list[indexfile.Moved]) -> list[int] | None:
        """Where the spliced entries are (the splice placed them), when each is what git wrote for its
        staged file."""
        assert self.plan is not None and self.placed is not None
        return self.placed if indexfile.verify(data, staged, self.placed) else None

    def _plan(self, index: bytes, walked: Entries | None) -> splice.Plan | None:
        """Where the moved entries go in `index` (the user's, as read now; `walked`: its entries, if the
        move's first check walked them), when they can be spliced in."""
        if _attributes_in(index, self.top, self.written):
            return None
        if walked is None:
            walked = indexwalk.walk_for(index, self.width, len(self.moves))
        before: dict[str, tuple[str, str]] | None = {}
        if walked is None:
            before = self._neighbours([p for p, (o, _n) in self.moves.items() if o is None])
        if before is None:
            return None
        old = {p: o for p, (o, _n) in self.moves.items()}
        new = {p: n for p, (_o, n) in self.moves.items()}
        return splice.plan(index, self.width, old, new, before, walked)

    def _splice(self) -> tuple[mmap.mmap, int] | None:
        """The user's index as read before the push with the moved entries git wrote spliced in, written as
        the staging's index (the file the move installs), and its bytes; and where it first differs from
        the old one. The bytes are the file's pages mapped privately (the checksum's patches change only
        this process's copy of a page; the file gets them by `_patch`): no second 6 MB buffer to fill and
        free."""
        assert self.plan is not None
        with open(self.where / "small", "rb") as source:
            written = splice.entries(source.read(), self.width)
        made = None if written is None else self.plan.build(written)
        if made is None:
            return None
        self.placed = [made.where[p] for p, _oid in self.written]
        with open(self.where / "index", "xb+") as out:
            for piece in made.pieces:
                out.write(piece)
            out.flush()
            # On the disk now, while the push runs: the file is renamed over the index under the lock, and
            # ext4 (auto_da_alloc) writes a file renamed over another out then, 6 MB at 50,000 tasks,
            # ahead of the ref's own small write (`update-ref` after the move took 4 ms, not 1). The index
            # that replaces the user's is then also on the disk before it does.
            if self.sync:
                os.fdatasync(out.fileno())
            mapped = mmap.mmap(out.fileno(), out.tell(), flags=mmap.MAP_PRIVATE | _POPULATE)
        return mapped, made.first

    def _neighbours(self, added: list[str]) -> dict[str, tuple[str, str]] | None:
        """For each added path, the file before it in its folder in the commit moved from (path, object
        id): a new entry goes after that one's (`michi.git.splice`). None when one has none."""
        if not added:
            return {}
        assert self.old is not None
        folders = sorted({p.rpartition("/")[0] for p in added})
        if "" in folders:
            return None  # a file at the top: not a task's
        try:
            tree = objects.tree_of(self.repo, self.old)
            listed = {f: objects.folder_files(self.repo, tree, f) for f in folders}
        except (MichiError, OSError):  # the persistent `cat-file` gone: as when `ls-tree` failed
            return None
        found: dict[str, tuple[str, str]] = {}
        for path in added:
            name = _bytes(path)
            files = listed[path.rpartition("/")[0]] or []
            earlier = [f for f in files if _bytes(f[0]) < name]
            if not earlier:
                return None  # the first in its folder: git writes the index
            found[path] = max(earlier, key=lambda f: _bytes(f[0]))
        return found

    def _attributes(self) -> None:
        """The `.gitattributes` files along the moved paths, copied into the staging tree: git reads a
        path's attributes from the index, then from the work tree (an untracked one counts too)."""
        folders = {Path(p).parent for p, _oid in self.written}
        for folder in sorted({f for p in folders for f in (p, *p.parents)}):
            source = self.top / folder / ".gitattributes"
            with contextlib.suppress(OSError):
                if stat.S_ISREG(os.lstat(source).st_mode):
                    (self.where / "wt" / folder).mkdir(parents=True, exist_ok=True)
                    shutil.copyfile(source, self.where / "wt" / folder / ".gitattributes")

    def install(self, untouched: Callable[[], bool] = lambda: True) -> tuple[int, str] | None:
        """Finish the move: (0, "") when done; None when nothing was changed and `git restore` should do
        it; (1, why) when it failed midway (the caller puts the paths back, as after a failed restore).
        `untouched`: are the moved paths' files as the move's checks found them (asked with the lock
        held; False: `changed`, and the move is checked again)?"""
        try:
            return self._install(untouched)
        finally:
            self.drop()

    def _install(self, untouched: Callable[[], bool]) -> tuple[int, str] | None:
        if self.reader is None:
            return None
        self.reader.join()
        if self.found is None:
            return None
        staged, data, where, prefix = self.found
        if not (self._real_folders() and self._room()):
            return None  # a symlinked folder on the way, a folder where a file goes: git's checkout
        try:  # named in the staging folder, should this process be killed holding it (`clear_dead`)
            index_lock = heldindex.IndexLock.take(self.git_dir, self.where)
        except OSError:
            return None  # another git writes the index: the held move waits for it, and says so
        moving = False
        try:
            if _index_key(os.stat(self.git_dir / "index")) != self.index_was or not untouched():
                self.changed = True  # the user's `git add` or edit meanwhile: the move is checked again
                return None
            moving = True
            self._move_files()
            now = [os.lstat(self.top / p) for p, _oid in self.written]
            settled = time.time_ns() - _SETTLED_NS
            patches = indexfile.retime(data, staged, where, now, settled, self.width, prefix)
            if patches is None:
                return 1, "error: a moved task file changed while it was moved"
            self._patch(patches)
            with contextlib.suppress(OSError):  # the index replaced is freed with the staging, after the lock
                os.link(self.git_dir / "index", self.where / "index.old")
            os.rename(self.where / "index", self.git_dir / "index")
            return 0, ""
        except OSError as exc:
            if not moving:
                return None
            return 1, f"error: could not move the task files: {exc}"
        finally:
            index_lock.release()

    def _move_files(self) -> None:
        stage = self.where / "wt"
        for path, _oid in self.written:
            (self.top / path).parent.mkdir(parents=True, exist_ok=True)
            os.replace(stage / path, self.top / path)
        for path in self.deleted:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.top / path)
            heldindex.prune(self.top, Path(path).parent)

    def _patch(self, patches: list[tuple[int, bytes]]) -> None:
        """The staged index itself becomes the index: a few bytes patched, not 6 MB written. Its mtime is
        the index's it was copied from: an entry git would have found racily clean against that index (a
        file as new as it) stays so, and git compares that file's content, as after git's own write (git
        judged such entries in the staging tree, where the user's files are not)."""
        staged_index = os.open(self.where / "index", os.O_WRONLY | os.O_CLOEXEC)
        try:
            for offset, chunk in patches:
                os.pwrite(staged_index, chunk, offset)
            os.fchmod(staged_index, self.index_mode)
            os.utime(staged_index, ns=(time.time_ns(), self.index_was[3]))
        finally:
            os.close(staged_index)

    def _room(self) -> bool:
        """Is each path a file is written to free or a file? An empty folder there (the move's checks allow
        one) is git's to replace."""
        return _all_are(self.top, [p for p, _oid in self.written], stat.S_ISREG)

    def _real_folders(self) -> bool:
        """Is every folder above the moved paths in the work tree a real folder (or not there yet)? A
        rename through a symlinked folder would write outside the work tree."""
        folders = {Path(p).parent for p in [*(p for p, _oid in self.written), *self.deleted]}
        return _all_are(
            self.top, sorted({f for p in folders for f in (p, *p.parents) if f.parts}), stat.S_ISDIR
        )

    def drop(self) -> None:
        """Forget the staging: its process ends (its input closed) and its folder goes, once the lock is
        let go (`tidy`): freeing a 6 MB file costs ~5 ms, which nobody need wait for. A git still staging
        (the push was refused, or failed) is killed: it writes only in the staging folder, and finishing
        a 6 MB index there cost the lock's holder ~30 ms of CPU, up to 200 ms on a busy machine. The
        reader is not waited for either: it stops at its next step (building and writing a spliced
        index, finding the entries, the checksum; up to ~50 ms inside a refused round's hold on a busy
        machine) and is joined before the folder goes."""
        self.dropped.set()
        reader, proc = self.reader, self.proc
        if reader is not None:
            if proc is not None and proc.poll() is None:
                with contextlib.suppress(OSError):
                    proc.kill()
            prepared.later(reader.join)  # it ends with git, or at its next step
        elif proc is not None:
            with contextlib.suppress(OSError, ValueError):
                proc.communicate()
        # The index bytes it holds (the user's as read, and the spliced one: 6 MB each at 50,000 tasks)
        # are let go with the folder too: unmapping them cost ~0.4 ms apiece inside the lock.
        kept = (self.plan, self.found)
        self.proc = self.reader = self.found = None
        prepared.later(functools.partial(_leave, self.where, kept))


def _copy(source: int, target: int, size: int) -> None:
    done = 0
    while done < size:
        sent = os.sendfile(target, source, done, size - done)
        if sent == 0:
            raise OSError("the index ended early")
        done += sent


def _set(value: str | None) -> bool:
    """A git setting given and not false (`core.fsmonitor` may also be a hook's path)."""
    return value is not None and value.strip().lower() not in ("", "false", "no", "off", "0")


def _leave(where: Path, _kept: object = None) -> None:
    """Remove this process's staging folder: detached in michi's own processes (freeing the index it
    replaced, ~3 ms at 50,000 tasks, is nobody's wait: `michi.leftovers`), else here; `_kept`: what is to
    be freed with it (dropped when this is)."""
    if not leftovers.remove(str(where)):
        _clear(where)


def _clear(where: Path) -> None:
    """Remove a staging folder here."""
    with contextlib.suppress(FileNotFoundError):
        shutil.rmtree(where)


def clear_dead(git_dir: Path) -> None:
    """Remove the staging folders of michi processes no longer running (killed before they could), and
    the `index.lock` one of them held (the very file: same device, inode and ctime), which git would otherwise
    take for a git still writing the index."""
    folder = _folder(git_dir)
    try:
        if not _own_folder(git_dir):
            return
        names = os.listdir(folder)
    except OSError:
        return
    for name in names:
        pid = name.partition(".")[0]
        if not pid.isdigit() or int(pid) == os.getpid() or exists(int(pid)):
            continue
        if not _all_are(folder, [name], stat.S_ISDIR):
            continue  # not a staging folder (a symlink, a file): not michi's to remove
        with contextlib.suppress(OSError, ValueError):
            written = (folder / name / HELD).read_text()
            if heldindex.names(os.lstat(git_dir / "index.lock"), written):
                os.unlink(git_dir / "index.lock")
        _clear(folder / name)


def _index(git_dir: Path, read: IndexRead | None) -> IndexRead:
    """The index file's stat data, bytes and walked entries: as the move's first check read them (`read`),
    when it is still that file (git replaces the index, never writes into it), else read now (not walked)."""
    with open(git_dir / "index", "rb") as source:
        found = os.fstat(source.fileno())
        if read is not None and _index_key(read[0]) == _index_key(found):
            return read
        return found, source.read(), None


def _bytes(path: str) -> bytes:
    return path.encode("utf-8", "surrogateescape")


def _attributes_in(index: bytes, top: Path, written: list[tuple[str, str]]) -> bool:
    """Is there a `.gitattributes` along the written paths, in the work tree or in the `index` (its bytes)?
    git reads a file's attributes from the index first: a spliced move's git, whose index holds nothing
    but the moved entries, would not see those, so such a move is staged on a copy of the index. An
    entry is recognised by its name preceded by its length in its flags; any doubt counts as one."""
    folders = {Path(p).parent for p, _oid in written}
    names = {_bytes((f / ".gitattributes").as_posix()) for p in folders for f in (p, *p.parents)}
    if any(os.path.lexists(top / os.fsdecode(name)) for name in names):
        return True
    at = index.find(b".gitattributes\0", 12)
    while at != -1:
        end = at + len(".gitattributes")
        for name in names:
            start = end - len(name)
            length = int.from_bytes(index[start - 2 : start], "big") & 0xFFF
            if index[start:end] == name and length == min(len(name), 0xFFF):
                return True
        at = index.find(b".gitattributes\0", at + 1)
    return False


def usable(repo: Repo, moves: _Moves, config: Mapping[str, str]) -> bool:
    """May this move be staged? Only for an index in version 2 or 3, plain files, and an index michi may
    replace (`config`: git's settings, keys in lower case). The caller judged the index's size."""
    if "GIT_INDEX_FILE" in os.environ or config.get("index.version", "").strip() == "4":
        return False
    if any(_set(config.get(k)) for k in ("core.fsmonitor", "core.splitindex", "feature.manyfiles")):
        return False  # a watcher of the work tree, a split index, or an index in version 4
    assert repo.working_dir is not None
    git_dir = repo.paths.git_dir
    try:
        index = os.stat(git_dir / "index")
        if os.stat(repo.working_dir).st_dev != index.st_dev:
            return False
        if any(name.startswith("sharedindex.") for name in os.listdir(git_dir)):
            return False  # a split index: git's `link` extension is not read here
    except OSError:
        return False
    if (git_dir / "info" / "sparse-checkout").exists():
        return False
    paths = set(moves)
    for path, entries in moves.items():
        if any(e is not None and e[0] not in _FILE_MODES for e in entries):
            return False
        if any(parent.as_posix() in paths for parent in Path(path).parents):
            return False  # a folder that becomes a file, or the reverse: git's move, not this one
    return not _smudged(repo, [p for p, (_o, n) in moves.items() if n is not None], config)


def from_the_top(repo: Repo, config: Mapping[str, str]) -> list[str]:
    """git's settings naming a file relative to the work tree, as `-c` options naming it from anywhere:
    the staging git runs at the top of the staging tree, where a relative `core.attributesFile` names
    nothing (the moved files were written without its line endings and filters)."""
    named = config.get("core.attributesfile", "")
    if not named or named.startswith(("/", "~", "%(")):
        return []
    assert repo.working_dir is not None
    return ["-c", f"core.attributesFile={os.path.join(repo.working_dir, named)}"]


def _smudged(repo: Repo, written: list[str], config: Mapping[str, str]) -> bool:
    """Does a filter command run for one of the `written` paths (its `filter` attribute names a driver
    with a smudge or process command)? git runs it at the top of the work tree it writes, here the
    staging tree: a command or file named relative to the user's (`tools/smudge`) is not found there,
    and git writes the file unsmudged. One `check-attr`, only where such a command is configured."""
    drivers = set()
    for key, value in config.items():
        if key.startswith("filter.") and key.endswith((".smudge", ".process")) and value.strip():
            drivers.add(key[len("filter.") :].rpartition(".")[0])
    if not drivers or not written:
        return False
    status, out, _err = repo.execute(["check-attr", "-z", "filter", "--", *written])
    if status != 0:
        return True  # not known: git's restore, which runs the filters where they belong
    fields = out.decode("utf-8", "surrogateescape").split("\0")
    return any(value in drivers for value in fields[2::3])
