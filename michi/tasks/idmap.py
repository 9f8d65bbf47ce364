"""The id and name lookups of changing commands without loading every path (ADR 0015).

`.git/michi/task-idmap.v1` (`michi.tasks.blocks`) holds, for one tree, every task file twice: by id
(`(id, path)`, files with an id only) and by file name (`(name, path, id or None)`, every file). A lookup
reads the head and one or two blocks. What changed since that tree is the *overlay* the summary file
keeps (`index.TOP_NAME`, brought up by each new tree's diff): the paths changed or added (path -> id or
None) and the paths removed; a lookup takes the base's rows for paths the overlay does not name, plus the
overlay's. When the overlay grows past `REBASE` paths, the base is rewritten for the current tree (its
rows read whole, once per `REBASE` changed files).
"""

from __future__ import annotations

from pathlib import Path

from michi.tasks import blocks

NAME = "task-idmap.v1"
FORMAT = "idmap/1"
REBASE = 1024  # overlay paths past which the base is rewritten (the summary file holds the overlay)


def stem(path: str) -> str:
    """The file name without `.json`: the task's uuid in a file michi wrote."""
    return path.rsplit("/", 1)[-1][:-5]


def write(state_dir: Path, tree: str, ids: dict[str, int | None]) -> None:
    by_id = sorted((i, p) for p, i in ids.items() if i is not None)
    by_name = sorted((stem(p), p, i) for p, i in ids.items())
    blocks.write(state_dir / NAME, (FORMAT, tree), {"id": by_id, "name": by_name})


class IdMap:
    """The base file for tree `base` and the overlay bringing it to the snapshot's tree. Lookups raise
    `blocks.Damaged` when a block read fails its checksum (the caller then answers the full way)."""

    def __init__(self, table: blocks.Table, over: dict[str, int | None], gone: set[str]) -> None:
        self.table, self.over, self.gone = table, over, gone

    @classmethod
    def open(cls, state_dir: Path, base: str, over: dict[str, int | None], gone: set[str]) -> IdMap | None:
        """The map, or None when the base file is missing, damaged or describes another tree."""
        table = blocks.Table.open(state_dir / NAME)
        if table is None or table.head != (FORMAT, base):
            return None
        return cls(table, over, gone)

    def _kept(self, path: str) -> bool:
        return path not in self.over and path not in self.gone

    def with_id(self, wanted: int) -> list[str]:
        """Every path whose file has id `wanted`."""
        found = [row[1] for row in self.table.find("id", wanted) if self._kept(row[1])]
        return found + [p for p, i in self.over.items() if i == wanted]

    def with_name(self, prefix: str) -> list[str]:
        """Every path whose file name (without `.json`) starts with `prefix`."""
        found = [row[1] for row in self.table.prefixed("name", prefix) if self._kept(row[1])]
        return found + [p for p in self.over if stem(p).startswith(prefix)]

    def named(self, name: str) -> list[tuple[str, int | None]]:
        """(path, id or None) of every file named exactly `name` (None: the file does not parse)."""
        found = [(row[1], row[2]) for row in self.table.prefixed("name", name) if row[0] == name]
        return [(p, i) for p, i in found if self._kept(p)] + [
            (p, i) for p, i in self.over.items() if stem(p) == name
        ]

    def ids(self) -> dict[str, int | None]:
        """path -> id of every file (reads every block): for rewriting the base."""
        out = {row[1]: row[2] for row in self.table.rows("name") if self._kept(row[1])}
        out.update(self.over)
        return out
