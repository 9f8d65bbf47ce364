"""The few settings michi reads from git's config (the identity, the remotes' URLs), kept between commands
while nothing they come from has changed (ADR 0016).

Every command that changes tasks asks for them, and `git config` costs a process (a few ms, on the path of
every served command). The answer is kept in the state dir under a digest of everything `git config`
answers from (`files.config_fingerprint`: the text of each config file and the GIT_CONFIG* environment,
plus the git dir it is run for): equal digests, equal answers. With an `[include]` in any config file
there is no fingerprint, and git is asked every time.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable

from michi.atomic import read_regular, write_cache
from michi.git.files import config_fingerprint
from michi.objectid import object_id
from michi.repo import RepoPaths

CACHE_NAME = "git-settings.v6.json"  # v6: every URL and push URL (v5: checkout.workers)
_PLACE = ("GIT_DIR", "GIT_COMMON_DIR", "GIT_WORK_TREE")  # where git looks, when told


def _digest(paths: RepoPaths) -> str | None:
    found = config_fingerprint(paths.git_dir, paths.common_dir)
    if found is None:
        return None
    try:
        owners = [os.stat(p).st_uid for p in (paths.worktree, paths.git_dir)]  # git's safe.directory
    except OSError:
        return None
    place = [f"{k}={os.environ.get(k)}" for k in _PLACE] + [str(paths.git_dir), str(os.getuid()), str(owners)]
    # SHA-1 as git names a blob (CPython's own: hashlib would load OpenSSL, ADR 0010).
    return object_id(b"blob", "\0".join([*found, *place]).encode("utf-8", "surrogateescape"))


def settings(paths: RepoPaths, ask_git: Callable[[], dict[str, str]]) -> dict[str, str]:
    """`ask_git()`'s answer, from the cache when nothing it depends on changed since it was kept. The
    digest is taken before git is asked: a change in between makes the next command miss, never lie."""
    digest = _digest(paths)
    if digest is None:
        return ask_git()
    path = paths.state_dir / CACHE_NAME
    try:
        kept = json.loads(read_regular(path))
        if kept["digest"] == digest and isinstance(kept["values"], dict):
            return {str(k): str(v) for k, v in kept["values"].items()}
    except (OSError, ValueError, TypeError, KeyError):
        pass
    values = ask_git()
    with contextlib.suppress(OSError):  # best effort: without it, git is asked again next time
        path.parent.mkdir(parents=True, exist_ok=True)
        write_cache(path, json.dumps({"digest": digest, "values": values}).encode(), mode=0o600)
    return values
