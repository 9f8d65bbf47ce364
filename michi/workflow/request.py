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
    recovered: int = 0  # pending operations (interrupted or offline) now on the remote thanks to this run
    landed_before: int = 0  # of those, how many were found on the remote already (an orphaned push)
    refused: list[dict[str, Any]] = field(default_factory=list)  # pending operations that now refuse
    renumbered: list[dict[str, Any]] = field(default_factory=list)  # offline-added tasks given a new id
