"""The contract between the transaction engine and what it commits.

A `Mutation` is pure data naming an apply function (`"package.module:function"`) and its JSON-able
parameters. The engine journals it before it starts, so after a crash (SIGKILL) the next michi command
can apply it again to the then-current remote state: an operation lands exactly once (ADR 0004).

The apply function gets a read-only `TaskTree` of the fresh task branch and returns a `Change`; it must not
touch the disk or the network, and it may be called several times (each push rejected by the remote means
one more call on a newer tree). It raises a `michi.errors.MichiError` to refuse; then nothing is pushed.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from michi.plain import Plain


class TaskTree(Protocol):
    """The task branch at one commit (read-only). Paths are repo-relative with '/' separators."""

    @property
    def commit(self) -> str | None:
        """The commit's oid, or None when the task branch has no commit yet."""

    @property
    def tree_oid(self) -> str | None:
        """The root tree's oid (the key for caches), or None when there is no commit."""

    def task_files(self) -> dict[str, str]:
        """Every `.tasks/*.json` file of every domain: path -> blob oid."""

    def read(self, path: str, limit: int | None = None) -> bytes | None:
        """A file's content, or None when it does not exist in this tree; with `limit`, at most its first
        `limit + 1` bytes (a file larger than its reader allows costs no memory)."""

    def kind(self, path: str) -> str | None:
        """ "blob" (a file or symlink), "tree" (a folder), "commit" (a submodule), or None when nothing is
        at `path`."""

    def iter_blobs(self, oids: Sequence[str], limit: int | None = None) -> Iterator[tuple[str, bytes]]:
        """(oid, content) of each blob oid, in order, as they are read (one batched git call); with
        `limit`, a blob larger is cut to its first `limit + 1` bytes."""

    def changed_task_files(self, since_tree: str) -> dict[str, str | None]:
        """`.tasks/*.json` files that differ from tree `since_tree`: path -> new blob oid (None = deleted)."""


class ApplyContext(Plain):
    __slots__ = ("agent", "host", "now", "renumbered", "state_dir")

    def __init__(
        self,
        now: float,
        agent: str | None,
        host: str,
        state_dir: str,
        renumbered: Mapping[str, int] | None = None,
    ) -> None:
        self.now = now  # seconds since the epoch, taken once per apply
        self.agent, self.host = agent, host
        self.state_dir = state_dir  # the repository's private michi folder (for caches keyed by content)
        # uuid -> the id an offline add had until this application gave it another (ADR 0007): what a
        # command made before then meant by that id
        self.renumbered: Mapping[str, int] = renumbered or {}


@dataclass(frozen=True)
class Change:
    subject: str  # commit subject after "michi: ", e.g. "task done 42"
    writes: Mapping[str, bytes] = field(default_factory=dict)  # path -> full new content
    deletes: frozenset[str] = frozenset()
    # path -> the oid of a blob already in the repository: a file moved byte for byte (`michi migrate`,
    # ADR 0006). Naming the blob, not its bytes, spares writing 50,000 loose objects that a pack holds.
    links: Mapping[str, str] = field(default_factory=dict)
    trailers: Mapping[str, str] = field(default_factory=dict)  # extra commit trailers, e.g. Michi-Task
    result: Any = None  # handed back to the caller when the transaction succeeds
    # Numeric ids this change gives to tasks, by uuid. Offline they are provisional: the engine remembers
    # them and reports any that differ when the change is applied again at sync (ADR 0007).
    ids: Mapping[str, int] = field(default_factory=dict)

    @property
    def empty(self) -> bool:
        return not self.writes and not self.deletes and not self.links


ApplyFn = Callable[[TaskTree, Mapping[str, Any], ApplyContext], Change]


# The apply functions a journal entry or a group-commit offer may name (ADR 0004). Both are files under
# `.git/` that a hand edit or another tool can write: an entry naming `os:system` was imported and called.
APPLY = {
    "michi.tasks.create:add",
    "michi.tasks.create:import_tasks",
    "michi.tasks.create:init",
    "michi.tasks.ids:renumber",
    "michi.tasks.migrate:to_fanout",
    "michi.tasks.mutations:update",
    "michi.tasks.pool:next_claim",
    "michi.tasks.pool:reap",
}


def allow(apply: str) -> None:
    """Let a program built on the engine (the tests' driver) journal its own apply functions."""
    APPLY.add(apply)


class Mutation(Plain):
    __slots__ = ("apply", "params")

    def __init__(self, apply: str, params: Mapping[str, Any] | None = None) -> None:
        self.apply = apply  # "package.module:function" of an ApplyFn
        self.params: Mapping[str, Any] = {} if params is None else params  # must be JSON-serialisable

    def resolve(self) -> ApplyFn:
        module, _, name = self.apply.partition(":")
        fn: ApplyFn = getattr(importlib.import_module(module), name)
        return fn

    def to_json(self) -> dict[str, Any]:
        return {"apply": self.apply, "params": dict(self.params)}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Mutation:
        """A mutation read back from a file; ValueError for one naming no apply function of `APPLY`."""
        apply = data["apply"]
        if apply not in APPLY:
            raise ValueError(f"{str(apply)[:80]!r} is not one of michi's apply functions")
        return cls(apply=apply, params=dict(data.get("params") or {}))
