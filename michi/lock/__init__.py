"""The repo lock (ADR 0003): one `.michi.lock/` per repository, shared by michi and agents.

Public face only; the mechanisms live in the submodules. GitPython is never imported here (ADR 0002).
Re-exports are lazy (PEP 562): the pre-commit hook imports `michi.lock.record` on every commit and
must not pay for the whole package.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from michi.lock.errors import LockContention as LockContention
    from michi.lock.errors import LockLost as LockLost
    from michi.lock.errors import LockNotOwned as LockNotOwned
    from michi.lock.errors import LockPathInvalid as LockPathInvalid
    from michi.lock.errors import LockTimeout as LockTimeout
    from michi.lock.errors import Terminated as Terminated
    from michi.lock.fake import FakeLock as FakeLock
    from michi.lock.interface import LockInterface as LockInterface
    from michi.lock.record import TOKEN_ENV as TOKEN_ENV
    from michi.lock.record import Owner as Owner
    from michi.lock.repolock import RepoLock as RepoLock

_HOME = {
    "LockContention": "michi.lock.errors",
    "LockLost": "michi.lock.errors",
    "LockNotOwned": "michi.lock.errors",
    "LockPathInvalid": "michi.lock.errors",
    "LockTimeout": "michi.lock.errors",
    "Terminated": "michi.lock.errors",
    "FakeLock": "michi.lock.fake",
    "LockInterface": "michi.lock.interface",
    "TOKEN_ENV": "michi.lock.record",
    "Owner": "michi.lock.record",
    "RepoLock": "michi.lock.repolock",
}

__all__ = [
    "TOKEN_ENV",
    "FakeLock",
    "LockContention",
    "LockInterface",
    "LockLost",
    "LockNotOwned",
    "LockPathInvalid",
    "LockTimeout",
    "Owner",
    "RepoLock",
    "Terminated",
]
assert sorted(__all__) == sorted(_HOME)


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module 'michi.lock' has no attribute {name!r}")
    return getattr(importlib.import_module(home), name)
