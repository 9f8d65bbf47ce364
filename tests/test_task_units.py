"""Unit tests of the task logic above git, on an in-memory TaskTree (the integration tests use real git)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from michi.errors import ExitCode
from michi.tasks import claims, create, ids, index, pool, serialization, transitions
from michi.tasks.errors import (
    Claimed,
    CorruptTask,
    InvalidTransition,
    NoReadyTask,
    NotClaimOwner,
    TaskNotFound,
    VersionMismatch,
)
from michi.tasks.model import STATES, Task, tw_date
from michi.tasks.mutations import update
from michi.workflow.mutation import ApplyContext, Change

T0 = 1_700_000_000.0


class FakeTree:
    """A TaskTree over a dict of path -> bytes; each distinct content gets its own tree oid."""

    def __init__(self, files: Mapping[str, bytes] | None = None) -> None:
        self.files = dict(files or {})
        self.history: dict[str, dict[str, bytes]] = {}

    @staticmethod
    def _oid(data: bytes) -> str:
        return hashlib.sha1(data).hexdigest()

    @property
    def commit(self) -> str | None:
        return self.tree_oid

    @property
    def tree_oid(self) -> str | None:
        key = self._oid(json.dumps(sorted((p, self._oid(d)) for p, d in self.files.items())).encode())
        self.history[key] = dict(self.files)
        return key

    def task_files(self) -> dict[str, str]:
        return {
            p: self._oid(d) for p, d in self.files.items() if "/.tasks/" in f"/{p}" and p.endswith(".json")
        }

    def read(self, path: str, limit: int | None = None) -> bytes | None:
        data = self.files.get(path)
        return data if data is None or limit is None else data[: limit + 1]

    def kind(self, path: str) -> str | None:
        if path in self.files:
            return "blob"
        return "tree" if any(p.startswith(path + "/") for p in self.files) else None

    def iter_blobs(self, oids: Sequence[str], limit: int | None = None) -> Iterator[tuple[str, bytes]]:
        by_oid = {self._oid(d): d for d in self.files.values()}
        return ((o, by_oid[o] if limit is None else by_oid[o][: limit + 1]) for o in oids)

    def changed_task_files(self, since_tree: str) -> dict[str, str | None]:
        old = {p: self._oid(d) for p, d in self.history[since_tree].items()}
        new = self.task_files()
        out: dict[str, str | None] = {p: o for p, o in new.items() if old.get(p) != o}
        out.update({p: None for p in old if p not in new and p.endswith(".json")})
        return out

    def commit_change(self, change: Change) -> None:
        self.files.update(change.writes)
        for path in change.deletes:
            self.files.pop(path, None)


def ctx(tmp_path: Path, agent: str | None = None, now: float = T0) -> ApplyContext:
    return ApplyContext(now=now, agent=agent, host="test", state_dir=str(tmp_path / "state"))


def run(tree: FakeTree, fn: Any, params: dict[str, Any], c: ApplyContext) -> Change:
    json.dumps(params)  # params are journaled: they must be JSON
    change: Change = fn(tree, params, c)
    tree.commit_change(change)
    return change


def add(tree: FakeTree, tmp_path: Path, desc: str, n: int, **extra: Any) -> dict[str, Any]:
    params = {"uuid": f"00000000-0000-4000-8000-{n:012d}", "description": desc, "domain": ".", **extra}
    return run(tree, create.add, params, ctx(tmp_path)).result[0]  # type: ignore[no-any-return]


def act(tree: FakeTree, tmp_path: Path, action: str, ref: str, agent: str | None = None, **kw: Any) -> Task:
    change = run(tree, update, {"action": action, "ref": ref, **kw}, ctx(tmp_path, agent, kw.pop("now", T0)))
    return serialization.from_trusted(change.result[0]["record"])


def test_serialization_is_stable_pretty_and_round_trips() -> None:
    task = Task(
        uuid="00000000-0000-4000-8000-000000000001",
        id=7,
        description="x ü",
        entry="20240101T000000Z",
        modified="20240101T000000Z",
        tags=("b", "a"),
        depends=("z", "y"),
        extra={"zeta": 1, "due": "x"},
    )
    data = serialization.dumps(task)
    assert data.endswith(b"}\n") and b'\n  "uuid"' in data and "ü".encode() in data
    keys = list(json.loads(data))
    assert keys[:4] == ["uuid", "michi_id", "description", "status"] and keys[-2:] == ["due", "zeta"]
    again = serialization.loads(data, f".tasks/{task.uuid}.json")
    assert serialization.dumps(again) == data


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        (b"{not json", "not valid JSON"),
        (b"<<<<<<< HEAD\n{}\n=======\n{}\n>>>>>>> x\n", "conflict markers"),
        (b'{"uuid": "00000000-0000-4000-8000-000000000001"}', "missing"),
        (
            b'{"uuid":"00000000-0000-4000-8000-000000000002","michi_id":1,"description":"d","status":"pending",'
            b'"entry":"20240101T000000Z"}',
            "does not match",
        ),
    ],
)
def test_corrupt_files_are_refused_by_name(content: bytes, problem: str) -> None:
    path = "a/.tasks/00000000-0000-4000-8000-000000000001.json"
    with pytest.raises(CorruptTask) as err:
        serialization.loads(content, path)
    assert problem in err.value.message and path in err.value.message
    assert err.value.exit_code == ExitCode.CONFLICT


def test_transition_table_every_pair() -> None:
    base = Task(uuid="u", id=1, description="d", entry="20240101T000000Z", modified="20240101T000000Z")
    for action, (allowed, target) in transitions.TABLE.items():
        for state in STATES:
            task = base.replace(state=state)
            if state in allowed:
                moved = transitions.move(task, action, T0)
                assert moved.state == (target or state) and moved.version == 2
            else:
                with pytest.raises(InvalidTransition) as err:
                    transitions.move(task, action, T0)
                assert state in err.value.message and err.value.exit_code == ExitCode.CONFLICT


def test_done_sets_taskwarrior_status_and_end() -> None:
    task = Task(uuid="u", id=1, description="d", entry="20240101T000000Z", modified="20240101T000000Z")
    done = transitions.move(transitions.move(task, "start", T0), "done", T0 + 5)
    assert (done.status, done.end, done.start) == ("completed", tw_date(T0 + 5), tw_date(T0))
    deleted = transitions.move(task, "delete", T0)
    assert deleted.status == "deleted"


def test_ids_increase_and_survive_counter_loss(tmp_path: Path) -> None:
    tree = FakeTree()
    assert [
        add(tree, tmp_path, "a", 1)["record"]["michi_id"],
        add(tree, tmp_path, "b", 2)["record"]["michi_id"],
    ] == [1, 2]
    assert tree.files[ids.COUNTER_PATH] == b"2\n"
    del tree.files[ids.COUNTER_PATH]  # a hand edit lost it: the floor from the index keeps ids unique
    assert add(tree, tmp_path, "c", 3, floor=2)["record"]["michi_id"] == 3


def test_add_retry_on_newer_tree_takes_new_number(tmp_path: Path) -> None:
    tree = FakeTree()
    add(tree, tmp_path, "first", 1)
    stale = FakeTree(tree.files)
    params = {"uuid": "00000000-0000-4000-8000-000000000009", "description": "x", "domain": "."}
    assert create.add(stale, params, ctx(tmp_path)).result[0]["record"]["michi_id"] == 2
    add(tree, tmp_path, "other clone won", 2)
    assert create.add(tree, params, ctx(tmp_path)).result[0]["record"]["michi_id"] == 3


def test_version_check_and_bump(tmp_path: Path) -> None:
    tree = FakeTree()
    add(tree, tmp_path, "a", 1)
    assert act(tree, tmp_path, "modify", "1", if_version=1, description="b").version == 2
    with pytest.raises(VersionMismatch):
        act(tree, tmp_path, "start", "1", if_version=1)


def test_claims_exclusive_renew_release_reap(tmp_path: Path) -> None:
    tree = FakeTree()
    add(tree, tmp_path, "a", 1)
    got = act(tree, tmp_path, "claim", "1", agent="a1", ttl=60)
    assert (got.state, got.assignee, got.claim_expires) == ("in_progress", "a1", tw_date(T0 + 60))
    with pytest.raises(Claimed) as err:
        act(tree, tmp_path, "claim", "1", agent="a2", ttl=60)
    assert "a1" in err.value.message
    with pytest.raises(NotClaimOwner):
        act(tree, tmp_path, "release", "1", agent="a2")
    with pytest.raises(Claimed):
        act(tree, tmp_path, "done", "1", agent="a2")
    assert act(tree, tmp_path, "renew", "1", agent="a1", ttl=0).claim_expires is None
    assert act(tree, tmp_path, "release", "1", agent="a1").state == "todo"
    act(tree, tmp_path, "claim", "1", agent="a1", ttl=10)
    assert run(tree, pool.reap, {}, ctx(tmp_path, now=T0 + 5)).empty
    reaped = run(tree, pool.reap, {}, ctx(tmp_path, now=T0 + 11))
    assert serialization.from_trusted(reaped.result[0]["record"]).state == "todo"
    with pytest.raises(claims.AgentRequired):
        act(tree, tmp_path, "claim", "1", agent=None, ttl=10)


def test_next_claim_picks_most_urgent_ready(tmp_path: Path) -> None:
    tree = FakeTree()
    add(tree, tmp_path, "low", 1, priority="L")
    blocker = add(tree, tmp_path, "blocker", 2)
    add(tree, tmp_path, "high but blocked", 3, priority="H", depends=[blocker["record"]["uuid"]])
    add(tree, tmp_path, "medium", 4, priority="M")
    order = []
    for agent in ("a", "b", "c"):
        change = run(tree, pool.next_claim, {"ttl": 60}, ctx(tmp_path, agent))
        order.append((change.result[0]["record"]["description"], change.result[0]["urgency"]))
    # Taskwarrior's urgency: blocking an H task (+8) beats M (+3.9), which beats L (+1.8).
    assert order == [("blocker", 8.0), ("medium", 3.9), ("low", 1.8)]
    with pytest.raises(NoReadyTask) as err:
        run(tree, pool.next_claim, {"ttl": 60}, ctx(tmp_path, "d"))
    assert err.value.exit_code == ExitCode.NOT_FOUND
    counts = {k: err.value.details[k] for k in ("open", "blocked", "claimed", "mine", "review", "waiting")}
    assert counts == {"open": 4, "blocked": 1, "claimed": 3, "mine": 0, "review": 0, "waiting": 0}
    act(tree, tmp_path, "done", "2", agent="a")
    assert run(tree, pool.next_claim, {"ttl": 60}, ctx(tmp_path, "d")).result[0]["record"]["michi_id"] == 3


def test_index_is_incremental_never_stale_and_reports_corrupt(tmp_path: Path) -> None:
    state = tmp_path / "state"
    tree = FakeTree()
    add(tree, tmp_path, "a", 1)
    first = index.for_tree(tree, state)
    assert [t.description for t in first.tasks.values()] == ["a"]
    act(tree, tmp_path, "modify", "1", description="changed")
    tree.files["x/.tasks/00000000-0000-4000-8000-000000000005.json"] = b"{broken"
    again = index.for_tree(tree, state)
    assert [t.description for t in again.tasks.values()] == ["changed"]
    assert list(again.problems) == ["x/.tasks/00000000-0000-4000-8000-000000000005.json"]
    with pytest.raises(CorruptTask):
        again.get("00000000-0000-4000-8000-000000000005")
    with pytest.raises(TaskNotFound) as err:
        again.get("99")
    assert "michi doctor" in (err.value.hint or "")
    (state / index.CACHE_NAME).write_bytes(b"garbage")
    assert index.for_tree(tree, state).tasks.keys() == again.tasks.keys()


def test_corrupt_file_is_never_overwritten(tmp_path: Path) -> None:
    tree = FakeTree()
    add(tree, tmp_path, "a", 1)
    path = ".tasks/00000000-0000-4000-8000-000000000001.json"
    tree.files[path] = tree.files[path].replace(b"{", b"<<<<<<< ours\n{", 1)
    with pytest.raises(CorruptTask):
        act(tree, tmp_path, "done", "00000000-0000-4000-8000-000000000001", path=path)
