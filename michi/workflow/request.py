"""What a transaction is asked to do and what it reports back (ADR 0004)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from michi.config import Config
from michi.repo import RepoPaths

if TYPE_CHECKING:
    from michi.lock.record import Owner


@dataclass(frozen=True)
class TxnRequest:
    repo: RepoPaths
    config: Config
    command: str
    agent: str | None
    offline: bool = False
    push_all: bool = False
    on_wait: Callable[[Owner | None, float], None] | None = None


@dataclass
class TxnOutcome:
    result: Any
    commit: str | None
    pushed: bool
    branch: str
    remote: str | None
    attempts: int
    notes: list[str] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)
    recovered: int = 0  # operations of an earlier, interrupted michi process completed by this one
