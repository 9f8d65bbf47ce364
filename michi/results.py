"""What commands return: plain data that the CLI renders once, as JSON for agents or rich text for people."""

from __future__ import annotations

from typing import Any

from michi.plain import Plain


class Result:
    """Base of every command result: a frozen dataclass, or a `Plain` record on the start-up path (ADR
    0010); either way read-only. `to_json` is the agent contract."""

    exit_code: int = 0

    def to_json(self) -> Any:
        """A dataclass result's fields are its JSON unless it overrides this (`Plain` results do)."""
        import dataclasses  # results that keep the default are dataclasses; imported when one is shown

        return dataclasses.asdict(self)  # type: ignore[call-overload]

    def summary(self) -> str:
        """One line for people when no richer renderer is registered."""
        return ""


class Message(Result, Plain):
    """A result that is a sentence and some fields, e.g. 'Initialised michi in ...'."""

    __slots__ = ("data", "text")

    def __init__(self, text: str, data: dict[str, Any] | None = None) -> None:
        self.text = text
        self.data = {} if data is None else data

    def to_json(self) -> Any:
        return {"message": self.text, **self.data}

    def summary(self) -> str:
        return self.text
