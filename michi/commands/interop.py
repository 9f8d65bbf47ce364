"""`michi export` (a JSON array Taskwarrior's `task import` accepts) and `michi import FILE` (`task export`
output, matched by uuid: new tasks added with new ids, changed ones modified, the rest skipped; a task
michi changed after the data was exported is a conflict, left alone unless `--force`)."""

from __future__ import annotations

import io
import marshal
import os
import stat
import sys
import tempfile
import threading
from collections.abc import Container, Generator, Iterator
from contextlib import ExitStack, closing, contextmanager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import IO, Any

from michi import threads
from michi.commands import task_common
from michi.errors import Conflict, UsageError
from michi.git.repo import after_next_batch, cancel_after_batch
from michi.results import Result
from michi.session import Session
from michi.tasks import domains, ready, taskwarrior, twstream, viewtext
from michi.workflow import journal


@dataclass(frozen=True)
class Export(Result):
    records: list[dict[str, Any]]
    notes: list[str] = field(default_factory=list)  # on stderr: how old the data is, unreadable task files

    def to_json(self) -> Any:
        return self.records


def export(session: Session, *, every_domain: bool, domain: str | None, fetch: bool) -> Export:
    where = None if every_domain else domains.resolve(session.repo.worktree, session.cwd, domain)
    snap = task_common.read(session, fetch)
    found = sorted(
        ((p, t) for p, t in snap.index.tasks.items() if where is None or domains.domain_of(p) == where),
        key=lambda pt: pt[1].id,
    )
    return Export([taskwarrior.export_record(t, domains.domain_of(p)) for p, t in found], snap.notes)


IMPORT_CHUNK = 10_000  # tasks per import commit: 50,000 tasks land as 5 commits (ADR 0015)


class ImportConflict(Conflict):
    code = "import_conflict"


class ImportProblems(Conflict):
    code = "import_problems"


def import_file(
    session: Session,
    source: str,
    *,
    domain: str | None,
    wait: float | None,
    offline: bool,
    force: bool = False,
) -> task_common.Changed:
    from michi.workflow import Mutation

    where = domains.resolve(session.repo.worktree, session.cwd, domain)
    with ExitStack() as stack:
        stream = stack.enter_context(_opened(session, source))
        checked = stack.enter_context(tempfile.TemporaryFile())
        # The whole file is checked before anything lands, as when it was read at once. Each task, once
        # normalised, is kept on disk (marshal, length first), so the second pass reads it back instead
        # of parsing and normalising the export again; both passes hold one block and one chunk of
        # tasks, never the file (ADR 0015).
        links = Links()
        for item in _records(stream, session.repo.worktree, where):
            links.add(item["record"])
            data = marshal.dumps(item)
            checked.write(len(data).to_bytes(4, "big") + data)
        links.refuse_cycles(session)
        checked.seek(0)
        # A handful of commits, one transaction each (ADR 0015): each journal entry and commit stays
        # bounded, and a repeated import after a failure skips what already landed (matched by uuid).
        merged: dict[str, list[Any]] = {}
        results: list[Any] = []
        txn: dict[str, Any] = {}
        chunks = stack.enter_context(closing(_readied(_chunks(_spooled(checked)))))
        for chunk in chunks:
            params = {"records": chunk, "force": force}
            outcome = task_common.transact(
                session, Mutation("michi.tasks.create:import_tasks", params), wait, offline, save_index=False
            )
            del chunk, params
            for key, values in outcome.result["report"].items():
                merged.setdefault(key, []).extend(values)
            results += outcome.result["tasks"]
            info = task_common.txn_info(outcome)
            txn = {
                **info,
                "commit": info["commit"] or txn.get("commit"),
                "notes": txn.get("notes", []) + info["notes"],
            }
            txn["pushed"] = bool(info["pushed"] or txn.get("pushed"))
    snap = task_common.read(session)
    # Each task's --json text straight from its record (`viewtext`): no view dict, no encoder per task.
    fragments = [viewtext.text(r["record"], r["path"], snap.index) for r in results]
    del results
    dangling = links.dangling(snap.index.by_uuid) if links.depends else None  # no path list otherwise
    if dangling is not None:
        txn["notes"] = [*txn.get("notes", []), dangling]
    result = task_common.Changed(None, txn, merged, list(txn.get("notes", [])), fragments=fragments)
    conflicts, problems = result.report["conflicts"], result.report["problems"]
    failure: ImportProblems | ImportConflict | None = None
    if problems:  # records left out: the exit code must not say the import is complete
        report = result.to_json()
        failure = ImportProblems(
            f"{len(problems)} record(s) could not be imported ({_first(problems)}); "
            f"added {len(report['added'])}, modified {len(report['modified'])}"
            + (f", {len(conflicts)} conflict(s) left as they are" if conflicts else ""),
            hint="see `problems` (`michi doctor` names a corrupt task file): mend the file or the record, "
            "then run the same import again; what landed is skipped",
            **{k: v for k, v in report.items() if k != "tasks"},
        )
    elif conflicts:
        report = result.to_json()
        failure = ImportConflict(
            f"{len(conflicts)} task(s) changed in michi after the data was exported, left as they are "
            f"(ids {', '.join(str(c['id']) for c in conflicts)}); "
            f"added {len(report['added'])}, modified {len(report['modified'])}",
            hint="export again (`michi export`, then `task import`), redo those changes in Taskwarrior and "
            "import again; or pass --force to overwrite michi's newer changes",
            **{k: v for k, v in report.items() if k != "tasks"},
        )
    if failure is not None:
        failure.notes = list(result.notes)  # on stderr for people; in the error's `transaction` for agents
        raise failure
    return result


def _first(problems: list[dict[str, Any]]) -> str:
    """The first problem, in one line: where, then what."""
    first = problems[0]
    where = str(first.get("path") or first.get("uuid") or "?")
    what = str(first.get("problem", ""))
    what = what.removeprefix(f"import {where}: ").removeprefix(f"{where}: ")  # where is said once
    more = f", and {len(problems) - 1} more" if len(problems) > 1 else ""
    return " ".join(f"{where}: {what}{more}".split())  # one line, whatever the file held


class Links:
    """The dependencies an import brings, checked as a whole before anything lands: open tasks waiting
    for each other (through the import's records or the tasks already there) could never start, and
    `task modify --depends` refuses the same (`dependency_cycle`, ADR 0007). Only an import with some
    dependency reads the existing tasks."""

    def __init__(self) -> None:
        self.uuids: set[str] = set()
        self.depends: dict[str, list[str]] = {}  # open imported tasks with dependencies

    def add(self, record: dict[str, Any]) -> None:
        self.uuids.add(record["uuid"])
        depends = record.get("depends")
        if not (isinstance(depends, list) and depends):
            return  # most tasks: no `import` statement per task (~8 us of 50,000, ADR 0015)
        from michi.tasks.links import OPEN_STATUSES

        if record.get("status", "pending") in OPEN_STATUSES:
            self.depends[record["uuid"]] = [d.lower() for d in depends if isinstance(d, str)]

    def dangling(self, known: Container[str]) -> str | None:
        """The note on open imported tasks that depend on a uuid no task file holds once the import
        landed (`known`: the uuids of the task files then). Taskwarrior imports them, and so does michi,
        but such a task never becomes ready (ADR 0007): said once here, as `next` and `doctor` say later."""
        missing = dict.fromkeys(d for deps in self.depends.values() for d in deps if d not in known)
        if not missing:
            return None
        tasks = sum(any(d in missing for d in deps) for deps in self.depends.values())
        named = ", ".join(list(missing)[:3]) + (f" and {len(missing) - 3} more" if len(missing) > 3 else "")
        return (
            f"{tasks} imported open task(s) depend on {len(missing)} task(s) no task file holds ({named}): "
            "they can never start until that dependency is removed (`michi doctor` names each, with the "
            "`michi task modify ID --remove-depends UUID` that mends it)"
        )

    def refuse_cycles(self, session: Session) -> None:
        from michi.tasks.cycles import cycles
        from michi.tasks.errors import DependencyCycle
        from michi.tasks.links import OPEN_STATUSES

        if not self.depends:
            return
        graph: dict[str, list[str]] = {}
        for entry in task_common.read(session).index.entries.values():
            record = entry[1]
            if record is None or record["uuid"] in self.uuids:
                continue  # unreadable, or replaced by the import's record
            if record.get("status") in OPEN_STATUSES:
                graph[record["uuid"]] = list(record.get("depends") or ())
        graph.update(self.depends)
        for group in cycles(graph):
            if any(u in self.depends for u in group):
                named = ", ".join(group[:4]) + (f" and {len(group) - 4} more" if len(group) > 4 else "")
                raise DependencyCycle(
                    f"the import file makes tasks {named} depend on each other: none could ever start",
                    hint="remove one of those dependencies from the import file",
                    uuids=group[:20],
                )


def chunk_size() -> int:
    """Tasks per import transaction: IMPORT_CHUNK, or MICHI_IMPORT_CHUNK (tests use a few)."""
    raw = os.environ.get("MICHI_IMPORT_CHUNK", "")
    return int(raw) if raw.isdigit() and int(raw) > 0 else IMPORT_CHUNK


def _chunks(records: Iterator[dict[str, Any]]) -> Iterator[list[dict[str, Any]]]:
    """`records` in lists of `chunk_size()`; one empty list for no records (the import still says so)."""
    size, chunk, sent = chunk_size(), [], False
    for record in records:
        chunk.append(record)
        if len(chunk) == size:
            yield chunk
            chunk, sent = [], True
    if chunk or not sent:
        yield chunk


def _readied(chunks: Iterator[list[dict[str, Any]]]) -> Generator[list[dict[str, Any]], None, None]:
    """`chunks`, each with its new tasks made ready (`michi.tasks.ready`): the next one is read and made
    ready by a thread while the caller lands this one, most of which is waiting for git (the push, the
    checkout of 10,000 files). The thread starts once this chunk's commit is built (its ready tasks
    taken, its pack written): Python threads take turns on one core, and it must not slow that work
    under the lock. Two chunks are in memory at a time, never more."""
    from michi.git import pack  # hashlib: only when importing (ADR 0010)

    box: dict[str, Any] = {}

    def ahead(go: threading.Event | None = None) -> None:
        try:
            if go is not None:  # not while the apply function uses this chunk's: it holds the lock
                go.wait()
            found = next(chunks, None)
            if found is not None:
                blobs = ready.prepare(found)
                journal.known_json(found)  # its journal entry
                pack.ahead(blobs)  # its files hashed and compressed, if the ids are as guessed
            box["chunk"] = found
        except BaseException as exc:  # raised again in the caller's thread
            box["error"] = exc

    try:
        ahead()
        while True:
            if "error" in box:
                raise box["error"]
            chunk = box.pop("chunk")
            if chunk is None:
                return
            go = threading.Event()
            ready.notify(partial(after_next_batch, go.set))  # then this chunk's commit is built: git's turn
            worker = threading.Thread(target=ahead, args=(go,), name="michi-import-ahead", daemon=True)
            threads.start(worker)
            try:
                yield chunk
            finally:
                go.set()
                cancel_after_batch(go.set)  # no commit was built (nothing changed, or a failure)
                worker.join()
                journal.forget_json(chunk)
            del chunk
    finally:
        ready.forget()
        pack.forget_ahead()
        if box.get("chunk") is not None:  # read ahead, never handed over (the caller stopped)
            journal.forget_json(box["chunk"])


def _spooled(spool: IO[bytes]) -> Iterator[dict[str, Any]]:
    """The tasks the first pass wrote to `spool`, in order."""
    while size := spool.read(4):
        yield marshal.loads(spool.read(int.from_bytes(size, "big")))


def _records(stream: IO[bytes], top: Path, where: str) -> Iterator[dict[str, Any]]:
    """Each task of the export, normalised, with the domain it goes to (checked as --domain is)."""
    homes: dict[str, str] = {}
    seen: set[str] = set()
    for number, item in enumerate(twstream.items(stream), 1):
        record, named = taskwarrior.normalize(item, number)
        if record["uuid"] in seen:  # both would be "added" under two ids, and only one file would land
            raise UsageError(
                f"the import file has task {record['uuid']} more than once", hint="keep one record per uuid"
            )
        seen.add(record["uuid"])
        if named is None:
            yield {"record": record, "domain": where}
            continue
        if isinstance(named, str) and named in homes:
            home = homes[named]
        else:  # the same checks as --domain (ADR 0006): a domain naming a file or a symlink is refused
            home = domains.resolve_imported(top, named, record["uuid"])
            homes[named] = home
        yield {"record": record, "domain": home, "named": True}  # a task living elsewhere is left out


@contextmanager
def _opened(session: Session, source: str) -> Iterator[IO[bytes]]:
    """The export as a binary stream. It is read once: the second pass reads the checked tasks back from
    their own spool, so stdin needs no copy. It is read whole before the lock is taken (`import_file`),
    and only ever a block and one record at a time (`twstream`), whatever its size.

    A path is a file, or a pipe some program writes to (`<(task export)`, a named pipe whose writer
    started first). Anything else is refused before it is read (ADR 0006): a folder, a device
    (`/dev/zero` never ends), a socket; and a named pipe nobody writes to, which blocked until killed."""
    if source == "-":
        stdin = getattr(sys.stdin, "buffer", None)
        if stdin is None:  # a text stream without bytes underneath (an in-process test runner)
            stdin = io.BytesIO(sys.stdin.read().encode("utf-8", "surrogateescape"))
        yield stdin
        return
    path = session.cwd / source
    try:
        kind = _kind(os.stat(path).st_mode)  # before the open: opening a device can do something
        # O_NONBLOCK: a named pipe's open returns at once, where it waited for a writer, maybe for ever
        fd = None if kind else os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise UsageError(
            f"cannot read {source}: {exc.strerror or exc}", hint="pass a file written by 'task export'"
        ) from None
    if fd is not None and (kind := _kind(os.fstat(fd).st_mode)):  # the path changed meanwhile
        os.close(fd)
    if fd is None or kind:
        raise UsageError(
            f"cannot import {source}: it is {kind}, not a file",
            hint="pass a file written by 'task export', or pipe the export in: task export | michi import -",
        )
    os.set_blocking(fd, True)  # a pipe is then read as stdin is: until its writer closes it
    with os.fdopen(fd, "rb") as stream:
        if stat.S_ISFIFO(os.fstat(fd).st_mode) and not stream.peek(1):  # its end at once: no writer
            raise UsageError(
                f"cannot import {source}: it is a pipe nothing was written to (no writer)",
                hint=f"start the writer first (task export > {source} &), "
                "or pipe the export in: task export | michi import -",
            )
        yield stream


def _kind(mode: int) -> str | None:
    """What a path that cannot be imported is; None for a file or a pipe."""
    if stat.S_ISREG(mode) or stat.S_ISFIFO(mode):
        return None
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "no regular file"
