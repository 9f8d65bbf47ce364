"""What an MCP client can read: the agent's guide and the machine-readable contract."""

from __future__ import annotations

from collections.abc import Callable

# uri -> (name, mime type, description, reader)
RESOURCES: dict[str, tuple[str, str, str, Callable[[], str]]] = {}
