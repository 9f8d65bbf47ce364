"""One ranked list of the ranking (`michi.tasks.ranking`, ADR 0015), kept so that a call reads only its
top: the list as it was written (`base`: in memory, or rows of the cache's block file read a block at a
time from the top), less the uuids dropped since, merged with the uuids placed since (`added`, kept in
the same order). Dropping and placing touch only the overlay; the whole list is read only to rewrite it.
"""

from __future__ import annotations

import heapq
from bisect import insort
from collections.abc import Callable, Iterable, Iterator
from typing import Any

Key = Callable[[str], Any]


class Lane:
    __slots__ = ("added", "base", "dropped", "key")

    def __init__(
        self,
        key: Key,
        base: Callable[[], Iterable[str]] | list[str] | None = None,
        dropped: set[str] | None = None,
        added: list[str] | None = None,
    ) -> None:
        self.key = key
        self.base = base  # a list, or a function giving the block file's uuids in order
        self.dropped = set() if dropped is None else dropped
        self.added = [] if added is None else added

    def _base(self) -> Iterator[str]:
        rows = self.base() if callable(self.base) else (self.base or ())
        return (u for u in rows if u not in self.dropped)

    def __iter__(self) -> Iterator[str]:
        """The uuids in order (most urgent first), read from the top as far as the caller goes."""
        if not self.added:
            return self._base()
        return heapq.merge(self._base(), self.added, key=self.key)

    def first(self) -> str | None:
        return next(iter(self), None)

    def place(self, uuid: str) -> None:
        insort(self.added, uuid, key=self.key)

    def drop(self, uuids: set[str]) -> None:
        """No longer in the list (each may be placed again). Only what the base holds needs remembering;
        not knowing, every one is."""
        self.dropped |= uuids
        if self.added:
            self.added = [u for u in self.added if u not in uuids]

    @property
    def overlay(self) -> int:
        """How much differs from the base: past a bound, the list is written whole again."""
        return len(self.dropped) + len(self.added)

    def in_memory(self) -> bool:
        """Is the base a list only this process holds (a ranking built or re-scored)? None (a list
        begun since the block file) is all in `added`, which the ranking file keeps."""
        return isinstance(self.base, list)
