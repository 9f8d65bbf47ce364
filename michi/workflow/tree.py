"""`TaskTree` over a real commit: reads go through the persistent `git cat-file --batch` (michi.git.repo)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from functools import cached_property
from typing import TYPE_CHECKING

from michi import git

if TYPE_CHECKING:
    from michi.git import Repo


class GitTaskTree:
    def __init__(self, repo: Repo, commit: str | None) -> None:
        self._repo = repo
        self._commit = commit

    @property
    def commit(self) -> str | None:
        return self._commit

    @cached_property
    def tree_oid(self) -> str | None:
        return None if self._commit is None else git.tree_of(self._repo, self._commit)

    def task_files(self) -> dict[str, str]:
        return {} if self.tree_oid is None else git.ls_task_files(self._repo, self.tree_oid)

    def read(self, path: str, limit: int | None = None) -> bytes | None:
        if self.tree_oid is None:
            return None
        return git.read_path(self._repo, self.tree_oid, path, limit)

    def kind(self, path: str) -> str | None:
        return None if self.tree_oid is None else git.path_kind(self._repo, self.tree_oid, path)

    def iter_blobs(self, oids: Sequence[str], limit: int | None = None) -> Iterator[tuple[str, bytes]]:
        return git.iter_blobs(self._repo, oids, limit)

    def changed_task_files(self, since_tree: str) -> dict[str, str | None]:
        if self.tree_oid is None:
            return {}
        return git.diff_task_files(self._repo, since_tree, self.tree_oid)
