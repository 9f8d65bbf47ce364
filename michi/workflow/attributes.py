"""`.gitattributes` files git would wait on for ever (ADR 0004).

git reads the `.gitattributes` of every folder along a path it packs (the push's `pack-objects` asks each
blob's `delta` attribute), checks out or hashes, from the work tree, by opening it as a file: a FIFO (or a
device) of that name makes it wait for a writer for ever. michi then hung holding the repo lock, so every
other command timed out on it, and its push cannot be interrupted (it must learn whether it landed).
Each folder along the paths a transaction commits is looked at once (one `lstat`), before anything is built.
"""

from __future__ import annotations

import os
import shlex
import stat
from collections.abc import Iterable
from pathlib import Path

from michi.errors import UsageError

_KINDS = ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"))


class AttributeFiles:
    """The work tree at `top`, its folders' `.gitattributes` checked as paths in them are committed."""

    def __init__(self, top: Path) -> None:
        self.top = top
        self.seen: set[str] = set()

    def check(self, paths: Iterable[str]) -> None:
        """Refuse (`bad_domain`, exit 2) when a folder along one of `paths` holds a `.gitattributes` that
        git would block on. A folder found fine is not looked at again (nor, then, its parents); one
        refused is, each time a change is built again."""
        for path in paths:
            chain: list[str] = []  # the folders along `path` not yet found fine, innermost first
            folder = path.rpartition("/")[0]
            while folder not in self.seen:
                chain.append(folder)
                if not folder:
                    break
                folder = folder.rpartition("/")[0]
            for folder in chain:
                self._check(f"{folder}/.gitattributes" if folder else ".gitattributes")
            self.seen.update(chain)  # only once the whole way up is fine

    def _check(self, name: str) -> None:
        try:
            mode = os.lstat(self.top / name).st_mode
        except OSError:
            return  # nothing there (or not reachable): git finds nothing to wait on either
        for kind, what in _KINDS:
            if kind(mode):
                raise UsageError(
                    f"{name} is {what}: git opens the .gitattributes of every folder along a task file "
                    "it pushes or checks out, and would wait on it for ever",
                    hint=f"remove it (rm {shlex.quote(name)}) or give it another name, then retry",
                    code="bad_domain",
                )
