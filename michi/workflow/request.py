"""What a transaction is asked to do and what it reports back (ADR 0004)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from michi.config import Config
from michi.plain import Plain
from michi.repo import RepoPaths

if TYPE_CHECKING:
    from michi.lock.record import Owner


class TxnRequest(Plain):
    __slots__ = ("agent", "command", "config", "offline", "on_wait", "push_all", "repo")

    def __init__(
        self,
        repo: RepoPaths,
        config: Config,
        command: str,
        agent: str | None,
        offline: bool = False,
        push_all: bool = False,
        on_wait: Callable[[Owner | None, float], None] | None = None,
    ) -> None:
        self.repo, self.config, self.command, self.agent = repo, config, command, agent
        self.offline, self.push_all, self.on_wait = offline, push_all, on_wait


class TxnOutcome(Plain):
    __slots__ = (
        "attempts",
        "branch",
        "commit",
        "landed_before",
        "notes",
        "pushed",
        "recovered",
        "refused",
        "remote",
        "renumbered",
        "result",
        "timings",
    )

    def __init__(
        self,
        result: Any,
        commit: str | None,
        pushed: bool,
        branch: str,
        remote: str | None,
        attempts: int,
        notes: list[str] | None = None,
        timings: dict[str, float] | None = None,
        recovered: int = 0,
        landed_before: int = 0,
        refused: list[dict[str, Any]] | None = None,
        renumbered: list[dict[str, Any]] | None = None,
    ) -> None:
        self.result, self.commit, self.pushed, self.branch = result, commit, pushed, branch
        self.remote, self.attempts = remote, attempts
        self.notes = [] if notes is None else notes
        self.timings = {} if timings is None else timings
        self.recovered = (
            recovered  # pending operations (interrupted or offline) now on the remote thanks to this run
        )
        self.landed_before = (
            landed_before  # of those, how many were found on the remote already (an orphaned push)
        )
        self.refused = [] if refused is None else refused  # pending operations that now refuse
        self.renumbered = [] if renumbered is None else renumbered  # offline-added tasks given a new id

    # A handed-over operation's outcome travels from the holder to its waiter as JSON (ADR 0017); the
    # waiter's command renders it exactly as its own. `timings` are the waiter's own, not sent.
    _SENT = (
        "result",
        "commit",
        "pushed",
        "branch",
        "remote",
        "attempts",
        "notes",
        "recovered",
        "landed_before",
        "refused",
        "renumbered",
    )

    def to_json(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self._SENT}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> TxnOutcome:
        return cls(**{name: data[name] for name in cls._SENT})
