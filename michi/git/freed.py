"""Folders of finished moves, removed where nobody waits for it (ADR 0015).

A move renames its new index over the user's (`michi.git.staged`, `michi.git.heldindex`). The index it
replaces is 6 MB at 50,000 tasks, and the kernel takes ~3.5 ms to free it. Freed by the rename, that is
inside the lock's hold; freed after the lock is let go, it is still in the command's time, which an agent
calling michi in a loop waits for. So a move keeps the replaced index in its folder (one more link), and
its folder, once done with, is renamed `<name>.freed` (one rename) instead of removed. The next command
that changes tasks in this clone removes those folders in a thread while it builds its commit, before it
takes the lock: on a machine with a core to spare, at nobody's cost. A process that runs many commands
(the MCP server) removes its own the same way. So at most one such folder per command is left until
the next command.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import threading
from pathlib import Path

from michi import threads
from michi.git.heldindex import folder, own_folder

SUFFIX = ".freed"


def put_aside(where: Path) -> None:
    """Leave folder `where` (a move's, in the stage folder) to a later command to remove; removed now if
    its new name is taken (a folder of this process's not removed yet)."""
    try:
        os.rename(where, where.with_name(where.name + SUFFIX))
    except FileNotFoundError:
        return
    except OSError:
        with contextlib.suppress(FileNotFoundError):
            shutil.rmtree(where)


def free_replaced(git_dir: Path) -> threading.Thread | None:
    """Remove the folders earlier moves put aside (`put_aside`), in a thread of its own (returned, so a
    test can wait for it; nobody else does). One `listdir` when there are none."""
    stage = folder(git_dir)
    try:
        names = [name for name in os.listdir(stage) if name.endswith(SUFFIX)]
    except OSError:
        return None
    if not names or not own_folder(git_dir):
        return None  # through a symlinked folder this would remove in whatever folder it names
    thread = threading.Thread(
        target=_remove, args=([stage / n for n in names],), name="michi-free", daemon=True
    )
    threads.start(thread)
    return thread


def _remove(paths: list[Path]) -> None:
    for path in paths:
        with contextlib.suppress(OSError):
            if stat.S_ISDIR(os.lstat(path).st_mode):
                shutil.rmtree(path)  # never follows a symlink inside it
            else:
                os.unlink(path)  # a symlink is removed, not what it names
