"""Path names git refuses to check out, so michi never puts a file under one (ADR 0006).

git's `verify_path` refuses `.git` in any case, and, to protect clones on other systems (`core.protectNTFS`
is on by default everywhere, `core.protectHFS` on macOS), its NTFS spellings (trailing dots and spaces, an
alternate stream after `:`, the short name `git~1`, a backslash as a separator) and its HFS+ spellings
(characters HFS+ ignores, such as U+200C, anywhere in it). A Linux work tree can hold a folder of such a
name, and git's plumbing writes a tree naming it; but every clone's checkout of that tree then fails.
"""

from __future__ import annotations

import re

_NTFS_DOTGIT = re.compile(r"(?:\.git|git~1)[. ]*(?::|$)")
# The code points HFS+ ignores in names (git's `next_hfs_char`).
HFS_IGNORED = dict.fromkeys(
    [*range(0x200C, 0x2010), *range(0x202A, 0x202F), *range(0x206A, 0x2070), 0xFEFF], None
)


def git_refuses(name: str) -> bool:
    """Whether git refuses to check out a path with this component (one folder or file name)."""
    lowered = name.lower()
    if "git" not in lowered and lowered.isascii():
        return False  # every refused spelling holds "git"; the characters HFS+ ignores are not ASCII
    if lowered.translate(HFS_IGNORED) == ".git":
        return True
    return any(_NTFS_DOTGIT.match(part) for part in lowered.split("\\"))
