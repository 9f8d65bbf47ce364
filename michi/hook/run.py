"""`michi hook run`: what git runs before every commit. Exit 0 lets the commit through.

Speed is the point here (ADR 0005): the hook script starts Python with `-I -S`, and this module imports
only `os` and `sys` until there is something to check. With no lock folder and no task file in the
commit, that is one `git diff --cached --quiet` and exit 0 (ADR 0005). Everything else goes to the full
check in `michi.hook.check`, which prints its warnings or refusal to stderr, where git shows them.
"""

from __future__ import annotations

import os
import sys

USAGE = """usage: michi hook run

Git's pre-commit hook (installed by `michi hook install`). Refuses the commit while another process
holds michi's repo lock, or when it changes .tasks/ files by hand; lets michi's own commits through
(MICHI_LOCK_TOKEN); warns about a stale lock and lets the commit through. Extra arguments (file names
from the pre-commit framework) are ignored.
"""


def _say(line: str) -> None:
    """What the hook says names the lock's holder from its record, a file any process can write: an escape
    sequence in its host, agent or command must not reach the committer's terminal (`michi.shown`)."""
    from michi.shown import LINES_KEPT

    sys.stderr.write(line.translate(LINES_KEPT) + "\n")
    sys.stderr.flush()


def _full_check() -> int:
    from michi.errors import MichiError, NotARepository

    try:
        from michi.hook.check import check
        from michi.repo import find_repo

        try:
            repo = find_repo(os.getcwd())
        except NotARepository as exc:
            # No repository michi can find means no lock michi could hold here: nothing to protect.
            _say(f"michi: warning: {exc.message}; the pre-commit hook has nothing to check")
            return 0
        for warning in check(repo):
            _say(f"michi: warning: {warning}")
        return 0
    except MichiError as exc:
        _say(f"michi: {exc.message}" + (f"\n  hint: {exc.hint}" if exc.hint else ""))
        return int(exc.exit_code)
    except Exception as exc:  # a bug must not let commits through unchecked, nor hide itself
        _say(f"michi: the pre-commit hook failed: {type(exc).__name__}: {exc}")
        _say("  hint: please report this bug; `git commit --no-verify` skips the hook meanwhile")
        return 1


def main(argv: list[str]) -> int:
    if "-h" in argv or "--help" in argv:
        sys.stdout.write(USAGE)
        return 0
    from michi.hook import probe

    lock_dir = probe.lock_dir(os.getcwd())
    if lock_dir is not None and not os.path.lexists(lock_dir) and probe.task_files_staged() is False:
        return 0
    return _full_check()
