"""The apply functions the transaction engine runs on the fresh task branch (see michi.workflow.mutation).

Each is pure: it reads the `TaskTree`, decides on the fresh state and returns a `Change`, or raises a
MichiError to refuse. The command resolved ids and parsed input before the lock and passes hints (`path`);
what must be fresh (the task's state, claims, versions, the id counter) is read here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from michi.objectid import object_id
from michi.tasks import claims, idmap, serialization, transitions
from michi.tasks.errors import CorruptTask, DependencyCycle, TaskNotFound, TaskTooLarge, VersionMismatch
from michi.tasks.index import Index, for_tree, light, remember
from michi.tasks.model import MAX_TASK_BYTES, Annotation, Task, tw_date
from michi.workflow.mutation import ApplyContext, Change, TaskTree

SIMPLE = ("start", "stop", "review", "done", "delete")


def fresh_index(tree: TaskTree, ctx: ApplyContext) -> Index:
    return for_tree(tree, Path(ctx.state_dir), save=False)


def blob_oid(data: bytes) -> str:
    """The oid git gives a file's content (what the index is keyed by)."""
    return object_id(b"blob", data)


def written(subject: str, pairs: list[tuple[str, Task]], extra: Mapping[str, bytes] | None = None) -> Change:
    """A Change writing `pairs`; its result is JSON-able: [{path, record}] in the order given. Each file is
    first read back as every reader will read it: an operation applied from a damaged journal (its input
    never checked by the command line) wrote and pushed task files every clone then called corrupt."""
    records = map(serialization.to_record, (t for _p, t in pairs))
    files = [(p, rec, serialization.dumps_record(rec)) for (p, _t), rec in zip(pairs, records, strict=True)]
    for path, _rec, data in files:
        if len(data) > MAX_TASK_BYTES:
            break  # `written_files` refuses it as too large, the command's own refusal
        try:
            serialization.loads_record(data, path)
        except CorruptTask as exc:
            raise CorruptTask(
                f"refusing to write {exc.message}",
                hint="the operation's input is not a valid task (a damaged journal?): nothing was written",
            ) from None
    return written_files(subject, files, extra)


def written_files(
    subject: str, files: list[tuple[str, dict[str, Any], bytes]], extra: Mapping[str, bytes] | None = None
) -> Change:
    """`written` from (path, record, file) triples: an import makes its new files without a Task each."""
    for _path, rec, data in files:
        if len(data) > MAX_TASK_BYTES:  # never write a file every reader would call corrupt
            raise TaskTooLarge(
                f"task {rec['michi_id']} would be {len(data):,} bytes, over the {MAX_TASK_BYTES:,} a task "
                "file may hold",
                hint="keep long text in a file and name it in the task",
                id=rec["michi_id"],
            )
    writes = {path: data for path, _rec, data in files}
    remember({(p, blob_oid(data)): rec for p, rec, data in files})
    result = [{"path": p, "record": rec} for p, rec, _data in files]
    writes.update(extra or {})
    trailers = {"Michi-Task": files[0][1]["uuid"]} if len(files) == 1 else {}
    ids = {rec["uuid"]: rec["michi_id"] for _p, rec, _data in files}
    return Change(subject, writes=writes, trailers=trailers, result=result, ids=ids)


def load(tree: TaskTree, params: Mapping[str, Any], ctx: ApplyContext) -> tuple[str, Task]:
    """The task `ref` names: the file at the command's `path` hint when that file is one `ref` can name
    (its id, or a uuid it starts), else resolved on the fresh tree: a hint from a cache damaged past its
    checksum is not acted on (ADR 0015). An id wins over a uuid prefix of the same digits on the fresh
    tree, not on the command's snapshot: a clone that has not fetched since another added task 5000 must
    not finish its own task whose uuid starts with 5000."""
    hint = params.get("path")
    ref = str(params["ref"])
    digits = _digits(ref)
    with_id: list[str] | None = None  # the fresh tree's files holding id `digits`, looked up once
    gone: str | None = None  # the uuid of the task the command meant, when its file is not on the tree
    if hint:
        data = tree.read(hint, limit=MAX_TASK_BYTES)
        if data is not None:
            task = serialization.loads(data, hint)
            if digits is not None and digits in (task.id, ctx.renumbered.get(task.uuid)):
                return hint, task  # its id, or the provisional one this application just changed
            if _prefix_of(ref, hint) and (digits is None or not (with_id := _with_id(tree, digits, ctx))):
                return hint, task
        elif digits is not None and len(stem := idmap.stem(hint)) == 36:
            gone = stem.lower()  # a uuid: the file name of every task file michi writes
    if (
        digits is not None
        and len(paths := with_id if with_id is not None else _with_id(tree, digits, ctx)) == 1
    ):
        data = tree.read(paths[0], limit=MAX_TASK_BYTES)
        if data is not None:
            task = serialization.loads(data, paths[0])
            if task.id == digits:  # the map's word, checked against the file (a map past its checksums lies)
                return _meant(paths[0], task, gone, ref)
    path, task = fresh_index(tree, ctx).get(ref)
    return _meant(path, task, gone, ref)


def _meant(path: str, task: Task, gone: str | None, ref: str) -> tuple[str, Task]:
    """`task`, unless the command meant another one by that id whose file is gone from the fresh tree (a
    remote set back by a force-push dropped it, and a later add took its id, ADR 0004): ids are kept for
    good, so the task now holding it is not the one the command saw (a moved file keeps its uuid)."""
    if gone is None or task.uuid.lower() == gone:
        return path, task
    raise TaskNotFound(
        f"task {ref} as this command saw it ({gone[:8]}) is gone from the remote; task {ref} there now is "
        "another task",
        hint="the remote dropped it (`michi sync` names what a force-push dropped): redo what should stand",
        ref=ref,
        uuid=gone,
    )


def _digits(ref: str) -> int | None:
    """The id `ref` names if it is made only of digits (not `²`, which isdigit() takes and int() refuses)."""
    ref = ref.strip()
    return int(ref) if ref.isascii() and ref.isdigit() else None


def _prefix_of(ref: str, path: str) -> bool:
    """Is `ref` a uuid prefix (four or more) of this file's name, by `Index.find`'s rules?"""
    ref = ref.strip().lower()
    return len(ref) >= 4 and idmap.stem(path).startswith(ref)


def _with_id(tree: TaskTree, wanted: int, ctx: ApplyContext) -> list[str]:
    """The fresh tree's files holding id `wanted`: a block of its id map, no full index (ADR 0015)."""
    return light(tree, Path(ctx.state_dir)).paths_with_id(wanted)


def resolve_refs(tree: TaskTree, refs: list[str], ctx: ApplyContext) -> tuple[str, ...]:
    """Dependencies the command could not resolve in its (older) snapshot, resolved on the fresh tree."""
    if not refs:
        return ()
    index = fresh_index(tree, ctx)
    return tuple(index.get(ref)[1].uuid for ref in refs)


def _modified(task: Task, params: Mapping[str, Any], tree: TaskTree, ctx: ApplyContext) -> Task | None:
    changes: dict[str, Any] = {}
    for key in ("description", "priority", "project"):
        if params.get(key) is not None:
            changes[key] = params[key] or None  # "" clears priority or project
    dropped = set(params.get("tags_remove") or [])
    tags = [t for t in task.tags if t not in dropped]
    tags += [t for t in params.get("tags_add") or [] if t not in tags]
    unlinked = set(params.get("depends_remove") or [])
    added = [*(params.get("depends_add") or []), *resolve_refs(tree, params.get("depends_refs") or [], ctx)]
    if task.uuid in added:
        raise DependencyCycle(
            f"task {task.id} cannot depend on itself: it could never start",
            hint="name another task in --depends",
            id=task.id,
        )
    depends = tuple(dict.fromkeys([d for d in task.depends if d not in unlinked] + added))
    new = [d for d in added if d not in task.depends]
    if new:
        _refuse_cycle(task, new, tree, ctx)
    if (
        tuple(tags) == task.tags
        and depends == task.depends
        and all(getattr(task, key) == value for key, value in changes.items())
    ):
        return None  # nothing to change: no new version, which would fail others' --if-version for nothing
    moved = transitions.move(task, "modify", ctx.now)
    return moved.replace(tags=tuple(tags), depends=depends, **changes)


class _AskAll(Exception):
    """The id map cannot name a task exactly (no map, a damaged one, a uuid two files share)."""


def _refuse_cycle(task: Task, added: list[str], tree: TaskTree, ctx: ApplyContext) -> None:
    """Refuse a dependency through which `task` would come to depend on itself: both would be blocked for
    ever, and `next` tells agents to wait for blocked work. Read on the fresh tree, so two clones each
    adding one half of a cycle cannot both land it. Only the tasks reachable from `added` are read, each
    found by a block of the fresh tree's id map (ADR 0015); when the map cannot name one, every task is."""
    index = light(tree, Path(ctx.state_dir))

    def depends_of(uuid: str) -> Any:
        rows = index.mapped_named(uuid)
        if rows is None or len(rows) > 1:
            raise _AskAll
        if not rows or rows[0][1] is None:
            return ()  # no such task, or a file that does not parse: no edges
        data = tree.read(rows[0][0], limit=MAX_TASK_BYTES)
        try:
            return serialization.loads_record(data, rows[0][0]).get("depends") if data is not None else ()
        except CorruptTask:
            return ()

    try:
        _walk(task, added, depends_of, index)
    except _AskAll:
        full = fresh_index(tree, ctx)

        def recorded(uuid: str) -> Any:
            path = full.by_uuid.get(uuid)
            record = full.entries[path][1] if path is not None else None
            return (record or {}).get("depends")

        _walk(task, added, recorded, full)


def _walk(task: Task, added: list[str], depends_of: Callable[[str], Any], index: Index) -> None:
    for dep in added:
        seen, todo = {dep}, [dep]
        while todo:
            for nxt in depends_of(todo.pop()) or ():
                if nxt == task.uuid:
                    ids = index.ids_of((dep,))
                    raise DependencyCycle(
                        f"task {task.id} cannot depend on task {ids[0]}: that task already depends on it "
                        "(directly or through others), and neither could ever start",
                        hint="remove the other dependency first ('michi task modify ID --remove-depends')",
                        id=task.id,
                    )
                if nxt not in seen:
                    seen.add(nxt)
                    todo.append(nxt)


def _check_version(task: Task, expected: Any) -> None:
    if expected is not None and task.version != expected:
        raise VersionMismatch(
            f"task {task.id} is at version {task.version}, not {expected}: it changed meanwhile",
            hint="show it again and retry with the new --if-version",
            id=task.id,
            version=task.version,
        )


def update(tree: TaskTree, params: Mapping[str, Any], ctx: ApplyContext) -> Change:
    """One action on one task: start, stop, review, done, delete, annotate, modify, claim, renew, release."""
    action = str(params["action"])
    path, task = load(tree, params, ctx)
    _check_version(task, params.get("if_version"))
    now = ctx.now
    if action == "claim":
        new = claims.claim(task, claims.require_agent(ctx.agent), float(params["ttl"]), now)
    elif action == "renew":
        new = claims.renew(task, claims.require_agent(ctx.agent), float(params["ttl"]), now)
    elif action == "release":
        new = claims.release(task, claims.require_agent(ctx.agent), now)
    elif action == "start" and claims.holds(task, ctx.agent, now):
        # A claim already moved the task to in_progress: its owner starting it is a no-op, not a conflict.
        record = serialization.to_record(task)
        return Change(f"task start {task.id} (already started)", result=[{"path": path, "record": record}])
    else:
        claims.refuse_if_claimed(task, ctx.agent, now)
        if action in SIMPLE:
            new = transitions.move(task, action, now)
        elif action == "annotate":
            note = Annotation(tw_date(now), str(params["text"]))
            new = transitions.move(task, "annotate", now).replace(annotations=(*task.annotations, note))
        elif action == "modify":
            modified = _modified(task, params, tree, ctx)
            if modified is None:
                record = serialization.to_record(task)
                return Change(f"task modify {task.id} (no change)", result=[{"path": path, "record": record}])
            new = modified
        else:
            raise ValueError(f"unknown action {action!r}")
    return written(f"task {action} {task.id}", [(path, new)])
