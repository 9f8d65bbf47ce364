"""`michi mcp`: serve this repository's tasks to one agent over MCP on stdin/stdout."""

from __future__ import annotations

from typing import Any

import typer

from michi.cli.options import session
from michi.errors import UsageError

INSTALL = "pip install 'michi[mcp]'"


def mcp(ctx: typer.Context) -> Any:
    """Run a stdio MCP server for one agent (--agent NAME or MICHI_AGENT; -C PATH for the repository).

    Start it from your MCP client's configuration, once per agent session: every tool call then costs a
    transaction, not a fresh Python process. Each changing call is one git transaction under the repo
    lock, exactly as the CLI's, so CLI users and other agents stay safe alongside it. Tools return what
    the CLI's --json prints; failures are tool errors carrying the CLI's JSON error document.
    """
    try:
        import mcp.server.mcpserver  # noqa: F401 - the optional extra; its absence is a usage error
    except ImportError:
        raise UsageError(
            "michi mcp needs the MCP SDK, which is not installed",
            code="mcp_not_installed",
            hint=f"install it with: {INSTALL}",
        ) from None
    from michi.mcp.server import serve

    s = session(ctx)
    s.repo  # noqa: B018 - fail now with michi's own error if this is not a git repository
    serve(s.cwd, s.resolve_agent())
    return None


def register(app: typer.Typer) -> None:
    app.command("mcp")(mcp)
