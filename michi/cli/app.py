"""The typer application: global options, and the table of top-level commands, loaded on demand.

Each CLI module declares its verbs with typer and adds them in `register(app)`. `COMMANDS` says which
module registers which top-level name; only the invoked name's module is imported and turned into click
commands, and of a group only the invoked verb, so `michi task add` builds neither the other task verbs
nor (or imports) the lock, hook or repo ones (ADR 0010).
Adding a top-level command or group is one line in `COMMANDS`.
"""

from __future__ import annotations

import copy
import importlib
from pathlib import Path
from typing import Annotated, Any

import typer
from typer.core import TyperGroup
from typer.main import get_command, get_command_name, get_group

from michi.cli import coerce
from michi.cli.main import version_line
from michi.session import Session

# Top-level name -> the module whose `register(app)` declares it, in the order `michi --help` lists them.
COMMANDS = {
    "init": "michi.cli.repo_cli",
    "task": "michi.cli.task_cli",
    "export": "michi.cli.repo_cli",
    "import": "michi.cli.repo_cli",
    "sync": "michi.cli.repo_cli",
    "doctor": "michi.cli.repo_cli",
    "migrate": "michi.cli.repo_cli",
    "lock": "michi.cli.lock_cli",
    "hook": "michi.cli.hook_cli",
    "status": "michi.cli.status_cli",
    "watch": "michi.cli.status_cli",
    "stats": "michi.cli.status_cli",
    "guide": "michi.cli.guide_cli",
    "mcp": "michi.cli.mcp_cli",
    "server": "michi.cli.server_cli",
}

EPILOG = (
    "Exit codes: 0 ok, 1 unexpected error, 2 usage, 3 not found, 4 conflict, 5 git or remote failure, "
    "75 lock busy, 130 interrupted. With --json (allowed anywhere before --, like --agent), "
    "stdout holds exactly one "
    'JSON document: the result, or {"error": {"code": ..., "message": ...}}.'
)
# Shared by the root and every module's scratch app: typer passes them down to the commands it builds.
SETTINGS: dict[str, Any] = {
    "add_completion": False,
    "pretty_exceptions_enable": False,
    "rich_markup_mode": None,
}


def _version(ctx: typer.Context, value: bool) -> None:
    if value:
        typer.echo(version_line(isinstance(ctx.obj, dict) and bool(ctx.obj.get("json"))))
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

    if agent is not None and not agent:  # `--agent` last, `--agent=`, `--agent ""`: not MICHI_AGENT's name
        from michi.errors import UsageError

        raise UsageError("--agent needs a name", hint="pass --agent NAME, or leave it out to use MICHI_AGENT")
    base = Path.cwd() if directory is None else (Path.cwd() / directory)
    obj: Any = ctx.obj or {}
    ctx.obj = Session(cwd=base, json=bool(obj.get("json")) or json_out, agent=agent, argv=sys.argv[1:])


class LazyGroup(TyperGroup):
    """The root group: a top-level command is built from its module the first time it is asked for, and
    of a group (`task`), only the verb being invoked (typer builds every verb of a group otherwise)."""

    _verb: str | None = None

    def resolve_command(self, ctx: Any, args: list[str]) -> Any:
        self._verb = args[1] if len(args) > 1 else None  # the word after the command: its verb, if any
        return super().resolve_command(ctx, args)

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        if cmd_name not in self.commands:
            # An unknown name loads everything, so the error can suggest the closest real command.
            for module in [COMMANDS[cmd_name]] if cmd_name in COMMANDS else COMMANDS.values():
                self._load(module)
        return self.commands.get(cmd_name)

    def list_commands(self, ctx: Any) -> list[str]:
        return list(COMMANDS)

    def _load(self, module_name: str) -> None:
        scratch = typer.Typer(**SETTINGS)
        importlib.import_module(module_name).register(scratch)
        scratch.registered_groups = [_only_verb(info, self._verb) for info in scratch.registered_groups]
        for name, command in get_group(scratch).commands.items():
            if name not in self.commands:
                self.add_command(command, name)


def _only_verb(info: Any, verb: str | None) -> Any:
    """A copy of a registered group that declares only `verb`, when it has such a verb (else all of
    them: help, or a typo to suggest a verb for). The module's own typer app is left as it is."""
    app = info.typer_instance
    chosen = [c for c in app.registered_commands if (c.name or get_command_name(c.callback.__name__)) == verb]
    if not chosen:
        return info
    info, app = copy.copy(info), copy.copy(app)
    app.registered_commands = chosen
    info.typer_instance = app
    return info


_preloaded: Any = None


def preload_app() -> None:
    """Build every command now, once, in a process that forks a worker per command (the server of
    ADR 0016): each worker then parses with the app already built instead of building its part."""
    global _preloaded
    root = build_app()
    for module in dict.fromkeys(COMMANDS.values()):
        if module not in ("michi.cli.mcp_cli", "michi.cli.server_cli"):  # never served
            root._load(module)
    _preloaded = root


def build_app() -> Any:
    """The root click group (typer-built) with no subcommand built yet (or all of them, preloaded)."""
    if _preloaded is not None:
        return _preloaded
    app = typer.Typer(
        name="michi",
        help=_root.__doc__,
        epilog=EPILOG,
        no_args_is_help=True,
        cls=LazyGroup,
        context_settings={"help_option_names": ["-h", "--help"]},
        **SETTINGS,
    )
    app.callback()(_root)
    coerce.install()
    return get_command(app)


def click_exceptions() -> Any:
    """The click exception module typer uses: recent typer vendors click as `typer._click`."""
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
