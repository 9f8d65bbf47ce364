"""The typer application: global options and the verbs. Command modules are imported lazily inside
each verb so `michi lock ...` never pays for GitPython (ADR 0002)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from michi import __version__
from michi.session import Session

EPILOG = (
    "Exit codes: 0 ok, 1 unexpected error, 2 usage, 3 not found, 4 conflict, 5 git or remote failure, "
    "75 lock busy, 130 interrupted. With --json (allowed anywhere before --, like --agent), "
    "stdout holds exactly one "
    'JSON document: the result, or {"error": {"code": ..., "message": ...}}.'
)


def _version(ctx: typer.Context, value: bool) -> None:
    if value:
        as_json = isinstance(ctx.obj, dict) and ctx.obj.get("json")
        typer.echo(f'{{"version": "{__version__}"}}' if as_json else f"michi {__version__}")
        raise typer.Exit(0)


def _root(
    ctx: typer.Context,
    directory: Annotated[
        Path | None,
        typer.Option("-C", metavar="PATH", help="Run as if michi was started in PATH (like git -C)."),
    ] = None,
    json_out: Annotated[
        bool, typer.Option("--json", help="Print one JSON document on stdout (for agents and scripts).")
    ] = False,
    agent: Annotated[
        str | None,
        typer.Option("--agent", metavar="NAME", help="Who is acting (env MICHI_AGENT); needed for claims."),
    ] = None,
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit.")
    ] = False,
) -> None:
    """michi: a git repository as a task tracker for one developer and many AI agents.

    Every command that changes tasks is one git transaction under the repo lock (.michi.lock):
    fetch, change the task files, commit, push, release.
    """
    import sys

    base = Path.cwd() if directory is None else (Path.cwd() / directory)
    obj: Any = ctx.obj or {}
    ctx.obj = Session(cwd=base, json=bool(obj.get("json")) or json_out, agent=agent, argv=sys.argv[1:])


def click_exceptions() -> Any:
    """The click exception module typer uses: recent typer vendors click as `typer._click`."""
    import importlib

    # Imported by name: which of the two exists depends on the typer version, and a static import of
    # the missing one fails type-checking in a clean environment (typer 0.2x does not install click).
    try:
        exceptions = importlib.import_module("typer._click.exceptions")
    except ImportError:  # typer before 0.20 depends on click itself
        exceptions = importlib.import_module("click.exceptions")
    if not hasattr(exceptions, "Abort"):  # vendored click raises typer's own Abort (typer 0.2x)
        import types

        from typer import exceptions as typer_exceptions

        return types.SimpleNamespace(**vars(exceptions), Abort=typer_exceptions.Abort)
    return exceptions


def build_app() -> typer.Typer:
    app = typer.Typer(
        name="michi",
        help=_root.__doc__,
        epilog=EPILOG,
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
        rich_markup_mode=None,
        context_settings={"help_option_names": ["-h", "--help"]},
    )
    app.callback()(_root)
    from michi.cli import guide_cli, hook_cli, lock_cli, mcp_cli, repo_cli, status_cli, task_cli

    repo_cli.register(app)
    task_cli.register(app)
    lock_cli.register(app)
    hook_cli.register(app)
    guide_cli.register(app)
    mcp_cli.register(app)
    status_cli.register(app)
    return app
