"""michi's MCP server (`michi mcp`): the CLI's commands as typed tools for agents (ADR 0011).

It needs the optional `mcp` extra (`pip install 'michi[mcp]'`); nothing else in michi imports this package.
"""
