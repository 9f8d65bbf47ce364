"""The repo lock (ADR 0003): one `.michi.lock/` per repository, shared by michi and agents.

Public face only; the mechanisms live in the submodules. GitPython is never imported here (ADR 0002).
Re-exports are lazy (PEP 562): the pre-commit hook imports `michi.lock.record` on every commit and
must not pay for the whole package.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from michi.lazy import attributes

if TYPE_CHECKING:
    from michi.lock.errors import Answered as Answered
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
    "Answered": "errors",
    "LockContention": "errors",
    "LockLost": "errors",
    "LockNotOwned": "errors",
    "LockPathInvalid": "errors",
    "LockTimeout": "errors",
    "Terminated": "errors",
    "FakeLock": "fake",
    "LockInterface": "interface",
    "TOKEN_ENV": "record",
    "Owner": "record",
    "RepoLock": "repolock",
}

__all__ = [
    "TOKEN_ENV",
    "Answered",
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


__getattr__ = attributes(__name__, _HOME, globals())
