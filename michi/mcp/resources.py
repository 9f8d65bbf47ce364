"""What an MCP client can read: the agent's guide and the machine-readable contract, as `michi guide` and
`michi --json guide` print them (ADR 0011)."""

from __future__ import annotations

import json
from collections.abc import Callable


def guide() -> str:
    from michi.commands import guide as guide_cmd

    return guide_cmd.manual()


def contract() -> str:
    from michi.cli import guide_cli

    return json.dumps(guide_cli.contract(), ensure_ascii=False, indent=1)


# uri -> (name, mime type, description, reader)
RESOURCES: dict[str, tuple[str, str, str, Callable[[], str]]] = {
    "michi://guide": (
        "guide",
        "text/plain",
        "The agent's manual: the work loop, claims and leases, exit and error codes, JSON shapes, the lock.",
        guide,
    ),
    "michi://contract": (
        "contract",
        "application/json",
        "The machine-readable contract: commands and options, exit codes, error codes, the task's fields.",
        contract,
    ),
}
