"""Agent names: who acts, as written into claims (`michi_assignee`), lock records and commit trailers.

A name reaches commit messages as a `Michi-Agent:` trailer and task files as the assignee, so it must be
one short printable line: a newline in `--agent` would otherwise forge trailers in the audit trail.
"""

from __future__ import annotations

from michi.errors import UsageError

MAX_AGENT_LENGTH = 64


class BadAgent(UsageError):
    code = "bad_agent"


def agent_problem(name: str) -> str | None:
    """Why `name` is not a valid agent name, or None when it is."""
    if not name:
        return "is empty"
    if len(name) > MAX_AGENT_LENGTH:
        return f"is longer than {MAX_AGENT_LENGTH} characters"
    if not name.isprintable():  # control characters, line and paragraph separators, invisible formats
        return "contains control or invisible characters"
    if name != name.strip():
        return "starts or ends with a space"
    return None


def check_agent(name: str, source: str) -> str:
    """`name` when valid; else `BadAgent` (exit 2) naming where it came from."""
    problem = agent_problem(name)
    if problem is not None:
        raise BadAgent(
            f"agent name {name[:80]!r} from {source} {problem}",
            hint=f"use a short printable name such as 'agent-1' (at most {MAX_AGENT_LENGTH} characters, "
            "no control characters)",
        )
    return name
