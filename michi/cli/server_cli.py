"""`michi server start|stop|status`: a warm michi for agents that call michi in loops (ADR 0016).
Command modules are imported inside each verb (ADR 0002)."""

from __future__ import annotations

from typing import Annotated, Any

import typer

server_app = typer.Typer(
    help="A warm michi: fresh `michi` calls skip michi's start-up while it runs.\n\n"
    "While it runs, every `michi` command of this user and michi installation (but lock, hook, mcp and "
    "server) is handed to it and runs "
    "in a process forked from it, with the caller's terminal, directory, environment and exit code; "
    "nothing else changes. It stops after --idle seconds without a command. MICHI_SERVER=off runs "
    "every command without it; MICHI_SERVER=auto starts it on the first command.",
    no_args_is_help=True,
)


@server_app.command("start")
def start(
    idle: Annotated[
        float | None,
        typer.Option(
            "--idle",
            min=1,
            metavar="SECONDS",
            help="Stop after this long without a command (default 900, env MICHI_SERVER_IDLE).",
        ),
    ] = None,
) -> Any:
    """Start the server in the background (nothing happens if it runs already)."""
    from michi.commands import server

    return server.start(idle)


@server_app.command("stop")
def stop() -> Any:
    """Stop the server; the commands it is running finish first."""
    from michi.commands import server

    return server.stop()


@server_app.command("status")
def status() -> Any:
    """Whether a server runs, its PID, how many commands it served and which run now."""
    from michi.commands import server

    return server.status()


def register(app: typer.Typer) -> None:
    app.add_typer(server_app, name="server")
