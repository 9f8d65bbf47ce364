"""Moving the user's index and work tree between two commits that differ in a few paths (ADR 0015).

`git read-tree -m -u old new` reads both trees and the whole index: at 50,000 task files that is a
quarter of a second inside the lock for every transaction, though a commit of michi's changes one or two
files. Here only the paths that differ are checked and moved, with the same promise as read-tree: a path
that differs may be moved only when the index holds `old`'s version and the work tree file matches the
index (or, for a path `old` lacks, nothing is there); otherwise nothing at all changes and the refusal is
returned. The user's staged and unstaged work in every other path is not even looked at.

Two git processes touch the index: one `diff-index` checks, one `git restore` moves index entries and
files together, with git's `index.lock` held from the last look at the index to its write, as git's own
checkout holds it (`michi.git.heldindex`), or the move staged beside the push (`michi.git.staged`).
git rewrites the whole index file on every change (~6 MB hashed at 50,000 entries, the largest share of
a move); writing it once instead of twice (`update-index --index-info`, then `checkout-index -u`) halves
that.
"""

from __future__ import annotations

import contextlib
import os
import stat
import time
from collections.abc import Callable, Collection, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from michi.git import prepared
from michi.git.core import LITERAL, _exec, lock_held
from michi.git.objects import diff_moves
from michi.git.repo import output

if TYPE_CHECKING:
    from michi.git.indexwalk import IndexRead
    from michi.git.repo import Repo

# Above this many changed paths one read-tree is cheaper than the per-path work (and a first checkout of a
# whole task branch is such a case).
MAX_PATHS = 200
PathEntry = tuple[int, str] | None  # (mode, blob oid), None when the path is absent
Moves = Mapping[str, tuple[PathEntry, PathEntry]]  # path -> (entry in old, entry in new)


def _names(out: str) -> list[str]:
    return [p for p in out.split("\0") if p]


_CHECK = ("diff-index", "-z", "--name-only", "--no-renames")
_LISTING = ("ls-files", "-v", "-s", "-z", "--")
# A file changed this recently may change again without its ctime moving (the kernel stamps files from
# a clock that ticks once per jiffy, 1-10 ms); one changed before that cannot, so equal stat data later
# proves it untouched.
_SETTLED_NS = 20_000_000


class _Ahead:
    """The common case's checks (`_refusal`'s first process, and `_hidden_changes`' listing), run while
    the push runs. Their answer counts only if nothing they looked at changed meanwhile: the index file
    and every path's stat data are read before they start and compared after; any difference, and the
    checks run again as they always did."""

    def __init__(self, repo: Repo, old: str, paths: list[str]) -> None:
        self.repo, self.key = repo, (old, tuple(paths))
        self.before = _stats(repo, paths)
        commands = [[*_CHECK, old, "--", *paths], [*_LISTING, *paths]]
        self.procs = [repo.start(c, env=LITERAL) for c in commands] if self.before else []

    def clean(self) -> str | None:
        """The listing, when the check said clean and both still hold; None otherwise."""
        if not self.procs:
            return None
        (check, _), (listing, _) = (proc.communicate() for proc in self.procs)
        if any(proc.returncode != 0 for proc in self.procs) or check:
            return None
        if _stats(self.repo, list(self.key[1])) != self.before or not _real_folders(self.repo, self.key[1]):
            return None
        return listing.decode("utf-8", "surrogateescape")


class _Read:
    """The same answer as `_Ahead`'s, read from the index file in this process: its entries for the paths
    are `old`'s, without flags, and their files match them by stat data, not racily (`indexfile.unchanged`).
    Two git processes (each reading the whole index: 6 MB at 50,000 tasks) fewer beside the push; when
    this cannot tell, `_Ahead` runs them as before. Its answer too counts only if nothing changed since."""

    def __init__(self, repo: Repo, paths: list[str], before: list[tuple[int, ...] | None]) -> None:
        self.repo, self.paths, self.before = repo, paths, before
        self.index: IndexRead | None = None  # the index file as read: stat data, bytes, walked entries

    @classmethod
    def made(cls, repo: Repo, paths: list[str], old: Mapping[str, PathEntry], width: int) -> _Read | None:
        """The check, when the index says clean now; None when git must decide. `width`: an object id's
        bytes."""
        before = _stats(repo, paths)
        if before is None or before[0] is None or not _real_folders(repo, paths):
            return None
        assert repo.working_dir is not None
        from michi.git import indexfile, indexwalk

        git_dir = repo.paths.git_dir
        try:
            # A split index keeps entries in another file, a sparse one whole folders in one entry: there
            # "no entry named so" cannot be read from this file alone.
            if (git_dir / "info" / "sparse-checkout").exists() or any(
                name.startswith("sharedindex.") for name in os.listdir(git_dir)
            ):
                return None
            with open(git_dir / "index", "rb") as index:
                found = os.fstat(index.fileno())
                if _stat_key(found) != before[0]:
                    return None
                data = index.read()
            files = {p: _lstat(Path(repo.working_dir, p)) for p in paths}
        except OSError:
            return None
        top = Path(repo.working_dir)
        walked = indexwalk.walk_for(data, width, len(paths))
        if not indexfile.unchanged(
            data, found.st_mtime_ns, old, files, lambda p, st: _small_file(top / p, st), walked
        ):
            return None
        read = cls(repo, paths, before)
        read.index = (found, data, walked)  # a staged move splices into these bytes (`michi.git.staged`)
        return read

    def clean(self) -> str | None:
        """An empty listing (no path among them git was told not to look at) while nothing changed."""
        unchanged = _stats(self.repo, self.paths) == self.before and _real_folders(self.repo, self.paths)
        return "" if unchanged else None


def _real_folders(repo: Repo, paths: Collection[str]) -> bool:
    """Is every folder on the way to `paths` a real folder (or not there)? `_stats` follows a symlinked
    one (a folder moved and a symlink to it put in its place leaves its files' stat data as they were),
    where git sees no file at all and its restore replaces the symlink by a folder."""
    assert repo.working_dir is not None
    for folder in {f for p in paths for f in Path(p).parents if f.parts}:
        try:
            if not stat.S_ISDIR(os.lstat(Path(repo.working_dir, folder)).st_mode):
                return False
        except FileNotFoundError:
            continue
        except OSError:
            return False
    return True


# A racily clean file is read whole by the index read only up to this size (task files are ~1 KB).
_READ_UP_TO = 1 << 16


def _small_file(path: Path, st: os.stat_result) -> bytes | None:
    """The bytes of the regular file `st` describes at `path` (never through a symlink, never a FIFO
    opened), None when it is larger than `_READ_UP_TO`, is another file by now, or cannot be read."""
    if st.st_size > _READ_UP_TO:
        return None
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        now = os.fstat(fd)
        if not stat.S_ISREG(now.st_mode) or (now.st_ino, now.st_dev) != (st.st_ino, st.st_dev):
            return None
        chunks, size = [], 0
        while size <= st.st_size:
            chunk = os.read(fd, st.st_size + 1 - size)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        return b"".join(chunks)
    except OSError:
        return None
    finally:
        os.close(fd)


def _lstat(path: Path) -> os.stat_result | None:
    try:
        return os.lstat(path)
    except FileNotFoundError:
        return None


def _stats(repo: Repo, paths: list[str]) -> list[tuple[int, ...] | None] | None:
    """Stat data of the index file and of each path (None: nothing there); None when equal stat data
    later could not prove them untouched: another index file (`GIT_INDEX_FILE`), a file changed too
    recently, or a file system whose times are coarser than a millisecond."""
    if "GIT_INDEX_FILE" in os.environ:
        return None
    assert repo.working_dir is not None
    settled = time.time_ns() - _SETTLED_NS
    found: list[tuple[int, ...] | None] = []
    for where in [repo.paths.git_dir / "index", *(Path(repo.working_dir, p) for p in paths)]:
        try:
            st = os.lstat(where)
        except FileNotFoundError:
            found.append(None)
            continue
        except OSError:
            return None
        if st.st_ctime_ns > settled or st.st_ctime_ns % 1_000_000 == 0:
            return None
        found.append(_stat_key(st))
    return found


def _stat_key(st: os.stat_result) -> tuple[int, ...]:
    return (st.st_mode, st.st_ino, st.st_dev, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def _refusal(
    repo: Repo, old: str, paths: list[str], added: list[str], deleted: set[str], goal: _Goal
) -> str | None:
    """Why moving `paths` away from `old` to `goal` would lose something of the user's, or None when it
    would not."""
    # One process for the common case: empty means the index holds old's version of every path and no
    # work tree file is even stat-dirty. Otherwise the exact checks decide (a touched but unchanged file
    # must not block michi, as it does not block read-tree). Started during the push when it could be,
    # with the listing that finds the changes git was told not to look for.
    ahead = repo.ahead.pop((old, tuple(paths)), None)
    if isinstance(ahead, _Ahead | _Read):
        listing = ahead.clean()
        if listing is not None:
            return _hidden_changes(repo, paths, listing, added) or _untracked(repo, added, deleted, goal)
    hidden = _hidden_changes(repo, paths, added=added)
    if hidden is not None:
        return hidden
    status, out, err = _exec(repo, *_CHECK, old, "--", *paths, env=LITERAL)
    if status == 0 and not out:
        return _untracked(repo, added, deleted, goal)
    status, staged, err = _exec(
        repo, "diff-index", "--cached", "-z", "--name-only", "--no-renames", old, "--", *paths, env=LITERAL
    )
    if status != 0:
        return err.strip() or f"diff-index exited {status}"
    if _names(staged):
        return f"error: your staged changes to {_names(staged)[0]} would be overwritten"
    status, unstaged, err = _exec(
        repo, "diff", "-z", "--name-only", "--no-renames", "--no-ext-diff", "--", *paths, env=LITERAL
    )
    if status != 0:
        return err.strip() or f"diff exited {status}"
    changed = _names(unstaged)
    if changed:
        ours = _already_written(repo, changed, goal)
        theirs = [p for p in changed if p not in ours]
        if theirs:
            return f"error: your local changes to {theirs[0]} would be overwritten"
    return _untracked(repo, added, deleted, goal)


def _hidden_changes(
    repo: Repo, paths: list[str], listing: str | None = None, added: Collection[str] = ()
) -> str | None:
    """A local change git was told not to look for: `update-index --assume-unchanged` or `--skip-worktree`
    (the usual way to keep a local tweak) hide it from `diff-index`, yet git's own checkout refuses to
    overwrite such a file. Its content is compared with the index here (one `ls-files`; a `hash-object`
    only when such a file is among `paths`). And an entry `old` lacks (at one of `added`, or inside one of
    `paths`: a folder that becomes a file): staged, though `diff-index old` misses it once its file is
    gone from the work tree; `git restore --staged` would drop it."""
    assert repo.working_dir is not None
    if listing is None:  # not listed beside the push (`_Ahead`)
        status, out, err = _exec(repo, *_LISTING, *paths, env=LITERAL)
        if status != 0:
            return err.strip() or f"ls-files exited {status}"
        listing = str(out)
    flagged: list[tuple[str, str, str]] = []  # (path, mode, oid) of the entries git does not stat
    named, absent = set(paths), set(added)
    for record in _names(listing):
        meta, _, path = record.partition("\t")
        if path in absent or path not in named:
            return f"error: your staged changes to {path} would be overwritten"
        tag, mode, oid, _stage = meta.split(" ")
        if (tag == "S" or tag.islower()) and os.path.lexists(Path(repo.working_dir, path)):
            flagged.append((path, mode, oid))
    refusal = "error: your local changes to {} would be overwritten (git was told not to look at it)"
    for path, mode, _oid in flagged:
        if mode not in ("100644", "100755"):  # a symlink or submodule git does not look at: left alone
            return refusal.format(path)
    if not flagged:
        return None
    status, hashed, err = _exec(repo, "hash-object", "--", *(p for p, _m, _o in flagged), env=LITERAL)
    if status != 0:
        return err.strip() or f"hash-object exited {status}"
    for (path, _mode, oid), now in zip(flagged, str(hashed).split(), strict=True):
        if now != oid:
            return refusal.format(path)
    return None


def _untracked(repo: Repo, added: list[str], deleted: set[str], goal: _Goal) -> str | None:
    """Something of the user's where a file is to be added. A folder is fine when all it holds are files
    this move deletes (a folder that becomes a file, as read-tree allows). A file or symlink where a folder
    of the new file must be refuses too, unless this move deletes it: git's checkout would unlink it.
    A file already holding what the move writes there (`goal`: `_already_written`) is michi's own."""
    assert repo.working_dir is not None
    top = Path(repo.working_dir)
    files: list[str] = []  # regular files where one is to be added: the user's unless michi wrote them
    for path in added:
        where = top / path
        for parent in reversed(Path(path).parents[:-1]):  # outermost first: `a`, then `a/b`
            if parent.as_posix() in deleted or ((top / parent).is_dir() and not (top / parent).is_symlink()):
                continue
            if os.path.lexists(top / parent):
                return f"error: the untracked file {parent.as_posix()} would be overwritten"
            break  # nothing there: nothing inside it either
        if not os.path.lexists(where):
            continue
        if where.is_dir() and not where.is_symlink():
            inside = [
                Path(folder, name).relative_to(top).as_posix()
                for folder, _dirs, names in os.walk(where)
                for name in names
            ]
            if all(p in deleted for p in inside):
                continue
        elif stat.S_ISREG(os.lstat(where).st_mode):
            files.append(path)
            continue
        return f"error: the untracked file {path} would be overwritten"
    if files:
        ours = _already_written(repo, files, goal)
        theirs = [p for p in files if p not in ours]
        if theirs:
            return f"error: the untracked file {theirs[0]} would be overwritten"
    return None


class _Goal(NamedTuple):
    """What a move writes to each path (None: the path goes), and the commits an interrupted michi may
    have left the work tree at (`own`)."""

    entries: Mapping[str, PathEntry]
    own: Collection[str]


def _already_written(repo: Repo, paths: list[str], goal: _Goal) -> set[str]:
    """Of `paths` (work tree files that differ from the index), those already holding what this move
    writes there, or what one of `goal.own` holds (a michi killed between writing the files and the index
    left them so): michi's own bytes, not the user's, and the move may write over them. One
    `hash-object` (with each path's filters), and an `ls-tree` per commit of `own`; only on this rare way."""
    assert repo.working_dir is not None
    top = Path(repo.working_dir)
    accepted: dict[str, set[str | None]] = {}
    for path in paths:
        entry = goal.entries.get(path)
        accepted[path] = {None if entry is None else entry[1]}
    for commit in goal.own:
        status, out, _err = _exec(repo, "ls-tree", "-r", "-z", commit, "--", *paths, env=LITERAL)
        if status != 0:
            continue  # not readable: nothing of it counts as michi's
        listed: dict[str, str] = {}
        for record in _names(out):
            meta, _, path = record.partition("\t")
            listed[path] = meta.split(" ")[2]
        for path in paths:
            accepted[path].add(listed.get(path))
    present: list[str] = []
    ours: set[str] = set()
    for path in paths:
        try:
            mode = os.lstat(top / path).st_mode
        except FileNotFoundError:
            if None in accepted[path]:
                ours.add(path)
            continue
        if stat.S_ISREG(mode):
            present.append(path)
    if present:
        status, hashed, _err = _exec(repo, "hash-object", "--", *present, env=LITERAL)
        if status == 0:
            ours.update(p for p, oid in zip(present, str(hashed).split(), strict=False) if oid in accepted[p])
    return ours


def check_ahead(
    repo: Repo,
    old: str,
    known: Moves,
    new: str | None = None,
    spend: bool = True,
    stop: Callable[[], bool] = lambda: False,
) -> None:
    """Start the check a move from `old` by `known` begins with, so it runs while the caller waits for
    something else (the push); `move_paths` uses its answer when nothing it looked at changed since.
    With `new`, the move's own `restore` is started too, to wait for its paths (`michi.git.prepared`), or,
    for a large index, the staged move (`michi.git.staged`): with the moved entries spliced into the
    index where that can be done, else, if `spend`, on a copy of the whole index (git's full write, on
    the bet that the push lands). `stop`: asked before the check and before the move's restore are
    started (the push they are for has failed: then nothing more is started)."""
    if stop():
        return
    diff = sorted(p for p, (o, n) in known.items() if o != n)
    if diff and len(diff) <= MAX_PATHS and (old, tuple(diff)) not in repo.ahead:
        with contextlib.suppress(OSError):  # no process to spare: the move checks as it always did
            quick = _Read.made(repo, diff, {p: known[p][0] for p in diff}, len(old) // 2)
            repo.ahead[(old, tuple(diff))] = quick or _Ahead(repo, old, diff)
    if diff and len(diff) <= MAX_PATHS and new is not None:
        specs = _outermost(diff)
        read = repo.ahead.get((old, tuple(diff)))
        index = read.index if isinstance(read, _Read) else None
        if isinstance(read, _Read):
            read.index = None  # 6 MB at 50,000 tasks: not kept longer than needed
        if stop():
            return
        if _stage(repo, old, new, {p: known[p] for p in diff}, specs, spend, index):
            return
        if len(_pathspec_input(specs)) <= prepared.ATOMIC:
            from michi.git import heldindex

            args = [*_RESTORE, f"--source={new}", "--pathspec-from-file=-", "--pathspec-file-nul"]
            copy = heldindex.copy_path(repo)  # the move's restore writes it (made once the lock is held)
            env = LITERAL if copy is None else {**LITERAL, "GIT_INDEX_FILE": str(copy)}
            prepared.prepare(repo, (_kind(copy), new, *specs), args, env=env)


def _stage(
    repo: Repo,
    old: str,
    new: str,
    moves: Moves,
    specs: list[str],
    spend: bool,
    index: IndexRead | None,
) -> bool:
    """Start the move's `git restore` on a staging tree, for a large index (`michi.git.staged`): writing
    only the moved entries, to be spliced into the index, or, if that cannot be and `spend`, on a copy of
    the whole index; False when neither is, and `restore` is prepared as before."""
    try:
        if os.stat(repo.paths.git_dir / "index").st_size < _stage_from():
            return False
    except OSError:
        return False
    from michi.git import staged  # only for a large index
    from michi.git.core import config_values

    config = config_values(repo)
    if not staged.usable(repo, moves, config):
        return False
    args = [*staged.from_the_top(repo, config), *_RESTORE[2:], f"--source={new}"]
    args += ["--pathspec-from-file=-", "--pathspec-file-nul"]
    try:
        move = staged.Staged(repo, new, moves, args, LITERAL, old=old, only_spliced=not spend, index=index)
    except OSError:
        return False
    if move.proc is None:
        move.drop()
        return False
    prepared.keep(repo, ("staged", new, *specs), move)
    try:
        move.feed(_pathspec_input(move.pathspecs(specs)))
    except OSError:
        repo.ahead.pop(("staged", new, *specs)).drop()
        return False
    return True


# A move is staged when the index is at least this large (`MICHI_STAGED_INDEX_BYTES` overrides it; tests
# use 0). Below it git's own write is quick, and staging's extra work (a copy, a thread, a process set up
# while the push runs) cost more than it saved: at 100 tasks, load ~4, 125 ms held against 98.
STAGE_FROM_BYTES = 1 << 20


def _stage_from() -> int:
    try:
        return int(os.environ.get("MICHI_STAGED_INDEX_BYTES", STAGE_FROM_BYTES))
    except ValueError:
        return STAGE_FROM_BYTES


def _staged(
    repo: Repo, new: str, paths: list[str], untouched: Callable[[], bool]
) -> tuple[tuple[int, str] | None, bool]:
    """The staged move's result when one was prepared beside the push (None: not installed, `git restore`
    moves), and whether the index or a moved file was written since the checks (then the move is checked
    again)."""
    move = repo.ahead.pop(("staged", new, *_outermost(paths)), None)
    if move is None:  # a `michi.git.staged.Staged`
        return None, False
    done: tuple[int, str] | None = move.install(untouched)
    return done, bool(move.changed)


class _Move(NamedTuple):
    """A move's paths as its checks (`_refusal`) take them: from `old` to `goal`, `added` and `deleted`
    among `paths`."""

    repo: Repo
    old: str
    paths: list[str]
    added: list[str]
    deleted: set[str]
    goal: _Goal


def _held_restore(
    move: _Move, new: str, changed: bool, untouched: Callable[[], bool]
) -> tuple[tuple[int, str], str | None, bool]:
    """`git restore` of the move's paths to `new` with git's `index.lock` held from a last look to the
    index's write (`michi.git.heldindex`), as git's own checkout holds it: a `git add` meanwhile fails
    saying so instead of being overwritten. When the index or a moved file changed since the checks
    (`changed`, or not `untouched`), they run again, the lock held. ((status, stderr), refusal, whether
    a failed move was already put back)."""
    from michi.git import heldindex

    repo, paths = move.repo, move.paths
    held = heldindex.take(repo)
    if held is None:  # not `.git/index`, no index yet: as before, the check and restore one after the other
        if changed and (refused := _refusal(*move)) is not None:
            return (0, ""), refused, False
        return _restore(repo, new, paths), None, False
    try:
        if (changed or not untouched()) and (refused := _refusal(*move)) is not None:
            return (0, ""), refused, False
        status, err = _restore(repo, new, paths, held.copy)
        if status == 0:
            try:
                held.install()
                return (0, err), None, False
            except OSError as exc:
                status, err = 1, f"error: could not write the index: {exc}"
        # The index was never replaced; the files git wrote go back by the copy, the lock still held.
        _put_back(move, held.copy)
        return (status, err), None, True
    finally:
        held.release()


def _put_back(move: _Move, index: Path | None = None) -> None:
    """Index (or `index`) and files of a failed move back to `old`: nothing of the move may remain. The
    added paths are not left to `git restore`, which refuses all its paths when one is in neither `old`
    nor the index (a git that died before writing its index, a staged move that failed after renaming
    its files): their entries go where they hold what the move wrote, and so do their files."""
    repo, added, goal = move.repo, move.added, move.goal
    if index is not None:  # a git killed while writing the copy left its lock: michi's own folder
        with contextlib.suppress(OSError):
            os.unlink(f"{index}.lock")
    _restore(repo, move.old, [p for p in move.paths if p not in added], index)
    if not added:
        return
    env = LITERAL if index is None else {**LITERAL, "GIT_INDEX_FILE": str(index)}
    status, out, _err = _exec(repo, "ls-files", "-s", "-z", "--", *added, env=env)
    if status == 0:
        entries = [record.partition("\t") for record in _names(out)]
        moved = [p for meta, _t, p in entries if (goal.entries.get(p) or (0, ""))[1] == meta.split(" ")[1]]
        if moved:
            _exec(repo, "rm", "--cached", "-q", "--", *moved, env=env)
    from michi.git.heldindex import prune

    assert repo.working_dir is not None
    top = Path(repo.working_dir)
    for path in sorted(_already_written(repo, added, goal)):
        with contextlib.suppress(OSError):
            os.unlink(top / path)
            prune(top, Path(path).parent)  # the folders it leaves empty, as git's checkout does


def _left_by_the_dead(repo: Repo) -> None:
    """A michi killed while it held git's `index.lock` for a move (staged or held) left it (and its
    folder): removed, so git can write the index again. One `listdir` when there is nothing."""
    try:
        if not os.listdir(repo.paths.git_dir / "michi" / "stage"):
            return
    except OSError:
        return
    from michi.git import staged

    staged.clear_dead(repo.paths.git_dir)


def move_paths(
    repo: Repo, old: str, new: str, known: Moves | None = None, own: Collection[str] = ()
) -> tuple[bool, str | None]:
    """(done, refusal): done is False when the change is too large for this path (use read-tree).
    `known`, when given, is every path that differs from `old` to `new` with its entries in both (the
    transaction built `new` from `old` and saw both): no git process has to diff two 50,000-entry trees.
    `own`: commits an interrupted michi may have left files at (a file holding their version, or `new`'s,
    is not the user's work)."""
    if known is not None:
        diff = {p: (o, n) for p, (o, n) in known.items() if o != n}
    else:
        diff = diff_moves(repo, old, new)
    if not diff:
        return True, None
    inside = _nested(repo, diff)
    if inside is not None:
        _unused_check(repo, old, sorted(diff))
        return True, inside
    if len(diff) > MAX_PATHS:
        return False, None
    paths = sorted(diff)
    added = [p for p in paths if diff[p][0] is None]
    deleted = {p for p in paths if diff[p][1] is None}
    goal = _Goal({p: diff[p][1] for p in paths}, own)
    move = _Move(repo, old, paths, added, deleted, goal)
    _left_by_the_dead(repo)
    before = _stats(repo, paths)  # the index and the paths' files, as the checks below find them
    refused = _refusal(*move)
    if refused is not None:
        return True, refused

    def untouched() -> bool:
        return before is not None and _stats(repo, paths) == before

    done, changed = _staged(repo, new, paths, untouched)
    put_back = False
    if done is None:
        done, refused, put_back = _held_restore(move, new, changed, untouched)
        if refused is not None:
            return True, refused
    status, err = done
    if status != 0:  # put index and files back: nothing of this move may remain
        if not put_back:
            _put_back(move)
        if (held := lock_held(err)) is not None:
            raise held
        return True, err.strip() or f"restore exited {status}"
    return True, None


# How the refusal of a move into a nested repository begins (`_nested`): its note is not about the
# user's changes (`michi.workflow.local` words it).
NESTED = "nested repository: "


def _nested(repo: Repo, paths: Collection[str]) -> str | None:
    """The refusal of a move that would write inside another git repository nested in this work tree (a
    folder with its own `.git`): a domain another clone pushed where this clone has a nested clone (ADR
    0006). git's checkout and `git restore` write into it; michi never does. Index entries without their
    files are no way out: `git status` shows them deleted and `git commit -a` commits that (a
    skip-worktree bit hides them only until the next `git restore` of the path), and the outer index
    would track the nested folder, whose files `git add -A` would then add. So the move is refused, the
    local branch stays, and the tasks stay on the task branch, which reads and changes use. One `lstat`
    per folder on the way to the moved paths, no git process."""
    assert repo.working_dir is not None
    folders: set[str] = set()
    for path in paths:
        folder = path.rpartition("/")[0]
        while folder and folder not in folders:
            folders.add(folder)
            folder = folder.rpartition("/")[0]
    top = repo.working_dir
    for folder in sorted(folders):  # outermost first: a parent sorts before what is inside it
        if os.path.lexists(f"{top}/{folder}/.git"):
            first = min(p for p in paths if p.startswith(f"{folder}/"))
            cut = f"/{first}".rfind("/.tasks/")
            domain = first[: cut - 1] if cut > 0 else (folder if cut < 0 else ".")
            return (
                f"{NESTED}{folder} is another git repository (it has its own .git) and michi never writes "
                f"into it, but the task branch has task files of domain {domain} there; nothing of yours "
                "was touched and the tasks stay on the task branch (move that repository out of this work "
                "tree, then run `michi sync`)"
            )
    return None


def _unused_check(repo: Repo, old: str, paths: list[str]) -> None:
    """The checks started beside the push for a move that is refused before it looks (`_nested`): their
    processes answered and ended now, as `_refusal` would have."""
    ahead = repo.ahead.pop((old, tuple(paths)), None)
    if isinstance(ahead, _Ahead | _Read):
        ahead.clean()


# `git restore` runs the post-checkout hook; moving michi's files is not the user's checkout (read-tree,
# which this replaces, runs none). `-c` sets it for this one process; the user's config is not touched.
_RESTORE = ("-c", f"core.hooksPath={os.devnull}", "restore", "--staged", "--worktree")


def _restore(repo: Repo, source: str, paths: list[str], index: Path | None = None) -> tuple[int, str]:
    """Set `paths` in the index and the work tree to their version in `source`, removing those it lacks
    (and the folders that leaves empty); stat data is recorded, so `git status` reads them as clean. One
    git process: the index is read and written once (at 50,000 entries each write is ~6 MB hashed).
    `index`: the index file git reads and writes instead (a held move's copy, `michi.git.heldindex`)."""
    if not paths:
        return 0, ""
    specs = _outermost(paths)
    fed = prepared.run(repo, (_kind(index), source, *specs), _pathspec_input(specs))  # started ahead
    if fed is not None:
        return fed[0], str(output(fed[2], False))
    env = LITERAL if index is None else {**LITERAL, "GIT_INDEX_FILE": str(index)}
    status, _out, err = _exec(repo, *_RESTORE, f"--source={source}", "--", *specs, env=env)
    return status, err


def _kind(index: Path | None) -> str:
    """What a move's `restore` started ahead is kept under: one writing a held move's copy of the index
    (`michi.git.heldindex`) is another than one writing the index."""
    return "restore" if index is None else f"restore:{index}"


def _pathspec_input(specs: list[str]) -> bytes:
    """`specs` as `restore --pathspec-from-file=- --pathspec-file-nul` reads them (git's exact bytes)."""
    return b"".join(spec.encode("utf-8", "surrogateescape") + b"\0" for spec in specs)


def _outermost(paths: list[str]) -> list[str]:
    """`paths` without those inside another of them: a folder that becomes a file (or the reverse) is one
    pathspec, which names everything in it (git would drop the folder's entries for the file first and
    then find nothing to match the inner names)."""
    named = set(paths)
    return [p for p in paths if not any(p[:i] in named for i, c in enumerate(p) if c == "/")]
