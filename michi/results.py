"""What commands return: plain data that the CLI renders once, as JSON for agents or rich text for people."""

from __future__ import annotations

import dataclasses
from typing import Any


class Result:
    """Base of every command result. Subclasses are frozen dataclasses; `to_json` is the agent contract."""

    exit_code: int = 0

    def to_json(self) -> Any:
        """Every result is a dataclass; its fields are its JSON unless it overrides this."""
        return dataclasses.asdict(self)  # type: ignore[call-overload]

    def summary(self) -> str:
        """One line for people when no richer renderer is registered."""
        return ""


@dataclasses.dataclass(frozen=True)
class Message(Result):
    """A result that is a sentence and some fields, e.g. 'Initialised michi in ...'."""

    text: str
    data: dict[str, Any] = dataclasses.field(default_factory=dict)

    def to_json(self) -> Any:
        return {"message": self.text, **self.data}

    def summary(self) -> str:
        return self.text
