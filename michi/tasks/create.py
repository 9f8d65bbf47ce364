"""Apply functions creating files: `add`, `import` and `init`. Ids are allocated here, on the fresh tree."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from michi.tasks import ids, ready, serialization, taskwarrior
from michi.tasks.domains import (
    FANOUT,
    LAYOUT_BYTES,
    LAYOUT_PATH,
    domain_of,
    layout_of,
    task_path,
    uuid_named,
)
from michi.tasks.errors import BadDomain, CorruptTask
from michi.tasks.model import MAX_ID, MAX_TASK_BYTES, Task, tw_date
from michi.tasks.mutations import fresh_index, resolve_refs, written, written_files
from michi.workflow.mutation import ApplyContext, Change, TaskTree

CONFIG_PATH = ".michi.toml"
KEEP_PATH = ".tasks/.keep"
CONFIG_TEXT = """\
# michi configuration (see the README). Every key is optional; MICHI_* variables and flags override it.
[michi]
# lock_ttl = 300          # seconds a lock lease lasts without renewal
# lock_wait = 30          # seconds a locking command waits for the lock (--wait)
# remote = "origin"       # the remote that is the source of truth
# branch = ""             # the task branch (empty: the remote's default branch)
# claim_ttl = 3600        # seconds an agent's claim lasts (0: no expiry)
# push_retries = 1        # refused pushes before a clone takes its turn on the remote
# allow_hand_edits = false
# read_max_age = 60       # seconds after the last sync `list` and `show` fetch first (0: always)
# group_commit = true     # a waiting command hands its change to the lock's holder (one push for all)
"""


def room_for(tree: TaskTree, path: str, seen: set[str] | None = None) -> str:
    """`path`, once every folder on its way is a folder (or nothing yet) on the fresh task branch. The
    domain was checked in the work tree before the lock; the branch may hold a file, symlink or submodule
    of someone's there, which michi must not replace (ADR 0006). Refusing here, in the apply function, also
    lets a pending offline entry be dropped with a note rather than block every later transaction. `seen`
    holds folders already checked on this tree (an import asks for 10,000 files in a few folders)."""
    if seen is not None and path.rpartition("/")[0] in seen:  # its folder, so every one on its way
        return path
    parts = path.split("/")[:-1]
    for end in range(1, len(parts) + 1):
        where = "/".join(parts[:end])
        if seen is not None:
            if where in seen:
                continue
            seen.add(where)
        kind = tree.kind(where)
        if kind not in (None, "tree"):  # a file, a symlink or a submodule: someone else's
            what = "a submodule" if kind == "commit" else "a file or symlink"
            raise BadDomain(
                f"{where} is {what} on the task branch, not a folder of michi's",
                hint="michi keeps tasks only in real .tasks/ folders: rename it, or use another --domain",
                path=where,
            )
    return path


def layout(tree: TaskTree) -> str:
    """The layout new task files get on this tree (ADR 0006): read on the fresh tree, so an add replayed
    after a `michi migrate` lands in the new layout."""
    return layout_of(tree.read(LAYOUT_PATH, limit=LAYOUT_BYTES))


def add(tree: TaskTree, params: Mapping[str, Any], ctx: ApplyContext) -> Change:
    fresh = task_path(str(params["domain"]), str(params["uuid"]), layout(tree))  # a fresh uuid4
    path = room_for(tree, fresh)
    existing = tree.read(path, limit=MAX_TASK_BYTES)
    if existing is not None:
        # Its uuid was fresh when the command ran, so this add already landed (ADR 0004): never overwrite
        # the task, which may have changed since; applying it again changes nothing.
        task = serialization.loads(existing, path)
        return Change(
            f"task add {task.id} (already there)",
            result=[{"path": path, "record": serialization.to_record(task)}],
            ids={task.uuid: task.id},
        )
    allocator = ids.Allocator(tree, floor=int(params.get("floor", 0)))
    now = tw_date(ctx.now)
    task = Task(
        uuid=str(params["uuid"]),
        id=allocator.take(),
        description=str(params["description"]),
        entry=now,
        modified=now,
        priority=params.get("priority"),
        project=params.get("project"),
        tags=tuple(params.get("tags") or ()),
        depends=(*params.get("depends", ()), *resolve_refs(tree, params.get("depends_refs") or [], ctx)),
    )
    return written(f"task add {task.id}", [(path, task)], allocator.write())


def init(tree: TaskTree, params: Mapping[str, Any], ctx: ApplyContext) -> Change:
    layout(tree)  # a newer michi's repository is refused (ADR 0006)
    writes: dict[str, bytes] = {}
    if tree.read(CONFIG_PATH, limit=0) is None:
        writes[CONFIG_PATH] = CONFIG_TEXT.encode()
    if tree.read(ids.COUNTER_PATH, limit=0) is None:
        writes[ids.COUNTER_PATH] = ids.counter_bytes(0)
    if tree.read(KEEP_PATH, limit=0) is None:
        writes[KEEP_PATH] = b""  # the root domain's .tasks/ folder, which git cannot hold empty
    if tree.read(LAYOUT_PATH, limit=0) is None and not any(map(uuid_named, tree.task_files())):
        # a new repository (another tool's `.tasks/*.json` are no tasks); one with tasks waits for migrate
        writes[LAYOUT_PATH] = f"{FANOUT}\n".encode()
    return Change("init", writes=writes, result=sorted(writes))


def import_tasks(tree: TaskTree, params: Mapping[str, Any], ctx: ApplyContext) -> Change:
    """Taskwarrior records matched by uuid: new ones added (new ids), changed ones modified, the rest skipped.

    Known uuids keep michi's id; a corrupt file is reported and left alone, never overwritten. A task
    michi changed after the imported data was exported is a conflict and left alone too, unless `force`:
    an old export must never revert newer work (an agent's claim, a `done`).
    """
    index = fresh_index(tree, ctx)
    allocator = ids.Allocator(tree, floor=index.max_id)
    new_layout = layout(tree)
    files: list[tuple[str, dict[str, Any], bytes]] = []
    folders: set[str] = set()
    report: dict[str, list[Any]] = {k: [] for k in ("added", "modified", "skipped", "problems", "conflicts")}
    for item in params["records"]:
        record, domain = item["record"], str(item["domain"])
        uuid = str(record["uuid"])
        path = index.by_uuid.get(uuid)
        made = ready.take(item)  # made outside the lock from this very item (ADR 0015), or None
        if path is None and made is not None:  # a new task: only its id is left to put in
            if made.problem is not None or made.record is None:
                report["problems"].append({"uuid": uuid, "problem": made.problem})
                continue
            ident = min(allocator.last + 1, MAX_ID)
            data = made.head + b"%d" % ident + made.tail
            if len(data) > MAX_TASK_BYTES:
                report["problems"].append(_too_large(uuid, made.record, len(data)))
                continue
            final = {**made.record, "michi_id": ident}
            allocator.take()
            files.append((room_for(tree, task_path(domain, uuid, new_layout), folders), final, data))
            report["added"].append(ident)
            continue
        record = dict(record)
        if path is not None and path in index.problems:
            report["problems"].append({"path": path, "problem": index.problems[path]})
            continue
        if path is not None and item.get("named") and domain_of(path) != domain:
            report["problems"].append(_elsewhere(uuid, domain_of(path), domain))
            continue
        # A Task only for a file the import would change: index.tasks would build one per task in the tree
        entry = index.entries.get(path) if path else None
        old = serialization.from_trusted(entry[1]) if entry is not None and entry[1] is not None else None
        imported_version = record.get("michi_version")
        if old is not None:
            taskwarrior.settle(record, old)
        # A new task gets the next id here (taken below, once it fits), so it is built once.
        record["michi_id"] = old.id if old else min(allocator.last + 1, MAX_ID)
        record["michi_version"] = old.version if old else 1
        try:
            if old is None:  # a new task: its file's record, checked, without a Task between (ADR 0015)
                final = serialization.record_of(record, f"import {uuid}")
            else:
                task = serialization.from_record(record, f"import {uuid}")
        except CorruptTask as exc:
            report["problems"].append({"uuid": uuid, "problem": exc.message})
            continue
        if old is not None and path is not None:
            if serialization.to_record(task) == serialization.to_record(old):
                report["skipped"].append(old.id)
                continue
            record["michi_version"] = imported_version
            if not params.get("force") and taskwarrior.stale(record, old):
                report["conflicts"].append(_conflict(old, imported_version))
                continue
            task, known = task.replace(version=old.version + 1), old.id
            final = serialization.to_record(task)
        else:
            path, known = None, None
        # The file as it will be written, sized once: a task no reader would accept is a problem.
        data = serialization.dumps_record(final)
        if len(data) > MAX_TASK_BYTES:
            report["problems"].append(_too_large(uuid, final, len(data)))
            continue
        if path is None:
            allocator.take()  # the id the task was given above
            files.append((room_for(tree, task_path(domain, uuid, new_layout), folders), final, data))
            report["added"].append(final["michi_id"])
        else:
            files.append((path, final, data))
            report["modified"].append(known)
    ready.expect(allocator.last + 1)  # the next chunk's blobs are made ahead with the ids that follow
    if not files:
        return Change("import (nothing changed)", result={"report": report, "tasks": []})
    change = written_files(f"import {len(files)} tasks", files, allocator.write())
    return replace(change, result={"report": report, "tasks": change.result})


def _too_large(uuid: str, record: Mapping[str, Any], size: int) -> dict[str, Any]:
    """A record whose task file would be over the limit: named by its uuid and the head of its
    description (what a person recognises), with its size and the limit (ADR 0006)."""
    head = " ".join(str(record.get("description", ""))[:40].split())
    return {
        "uuid": uuid,
        "problem": f"import {uuid}: its task file would be {size:,} bytes, over the limit of "
        f"{MAX_TASK_BYTES:,} (description {head!r}...)",
    }


def _elsewhere(uuid: str, lives: str, named: str) -> dict[str, Any]:
    """A record whose `michi_domain` is not where its task lives: michi moves no task between domains,
    and changing it where it lives would ignore what the record says (ADR 0006). Left out, said why."""
    return {
        "uuid": uuid,
        "domain": lives,
        "imported_domain": named,
        "problem": f"task {uuid} lives in domain {lives!r} but the import file names michi_domain "
        f"{named!r}: michi moves no task between domains; set its michi_domain to {lives!r} (or drop it) "
        "to import it",
    }


def _conflict(old: Task, imported_version: Any) -> dict[str, Any]:
    seen = f"version {imported_version}" if type(imported_version) is int else "an older copy"
    return {
        "id": old.id,
        "uuid": old.uuid,
        "version": old.version,
        "imported_version": imported_version if type(imported_version) is int else None,
        "problem": f"changed in michi (now version {old.version}, {old.state}) after {seen} was exported",
    }
