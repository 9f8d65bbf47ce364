"""The lock interface (seed 003): what code above the lock may rely on, real or fake."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Self


class LockInterface(ABC):
    @property
    @abstractmethod
    def token(self) -> str | None:
        """The current acquisition's token, or None when not held."""

    @abstractmethod
    def acquire(self, timeout: float) -> None:
        """Wait up to `timeout` seconds (0 = one try). Raises LockTimeout (LockContention for one try)."""

    @abstractmethod
    def release(self) -> None:
        """Idempotent; removes the lock only if it still carries our token."""

    @abstractmethod
    def renew(self) -> None:
        """Extend the lease; raises LockLost if the lock is no longer ours."""

    @abstractmethod
    def ensure_held(self) -> None:
        """Raise LockLost unless the lock still carries our token: call before each irreversible step."""

    @abstractmethod
    def on_release_requested(self, handler: Callable[[], None]) -> None:
        """`handler` runs (once per hold, from the renewal thread) when someone starts waiting."""

    @abstractmethod
    def held(self, timeout: float) -> AbstractContextManager[Self]:
        """Acquire, keep the lease renewed, release on exit (also on exceptions and SIGTERM)."""
