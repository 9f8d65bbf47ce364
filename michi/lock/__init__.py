"""The repo lock (issue 2, ADR 0003): one `.michi.lock/` per repository, shared by michi and agents.

Public face only; the mechanisms live in the submodules. GitPython is never imported here (ADR 0002).
"""

from michi.lock.errors import LockContention, LockLost, LockNotOwned, LockPathInvalid, LockTimeout, Terminated
from michi.lock.fake import FakeLock
from michi.lock.interface import LockInterface
from michi.lock.record import TOKEN_ENV, Owner
from michi.lock.repolock import RepoLock

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
