"""`michi guide`: the agent's manual; with --json, the contract, its commands read off the CLI itself."""

from __future__ import annotations

from typing import Any

import typer


def _param(param: Any) -> dict[str, Any]:
    out: dict[str, Any] = {
        "name": param.name,
        "kind": "option" if param.param_type_name == "option" else "argument",
        "required": bool(param.required),
    }
    if out["kind"] == "option":
        out["flags"] = [*param.opts, *param.secondary_opts]
        out["takes_value"] = not param.is_flag
        out["repeatable"] = bool(param.multiple)
        out["help"] = param.help or ""
    if param.metavar:
        out["metavar"] = param.metavar
    return out


def describe(command: Any, path: list[str]) -> list[dict[str, Any]]:
    """Every visible command under `command` (a click command or group), with its parameters."""
    if hasattr(command, "list_commands"):  # a group; the root builds its commands on demand (ADR 0010)
        out: list[dict[str, Any]] = []
        for name in sorted(command.list_commands(None)):
            sub = command.get_command(None, name)
            if sub is not None and not getattr(sub, "hidden", False):
                out += describe(sub, [*path, name])
        return out
    params = [p for p in command.params if not getattr(p, "hidden", False) and p.name != "help"]
    doc = (command.help or "").strip().split("\n\n")[0]
    return [{"command": " ".join(path), "help": " ".join(doc.split()), "params": [_param(p) for p in params]}]


def guide(ctx: typer.Context) -> Any:
    """How an agent works with michi: the work loop, claims, exit and error codes, JSON shapes, the lock.
    With --json: the machine-readable contract (commands, options, exit codes, error codes, task fields)."""
    from michi.cli.options import session
    from michi.commands import guide as guide_cmd
    from michi.results import Message

    if not session(ctx).json:
        return Message(guide_cmd.manual().rstrip("\n"))
    return guide_cmd.Guide("", contract_of(ctx.find_root().command))


def contract_of(root: Any) -> dict[str, Any]:
    """The contract read off `root`, the click command of the whole CLI (also served over MCP)."""
    from michi.commands import guide as guide_cmd

    data = guide_cmd.contract(describe(root, ["michi"]))
    data["global_options"] = [_param(p) for p in root.params if p.name not in ("help", "version")]
    return data


def contract() -> dict[str, Any]:
    """The contract of a freshly built CLI, for callers outside a CLI run (`michi mcp`'s resources)."""
    from michi.cli.app import build_app

    return contract_of(build_app())


def register(app: typer.Typer) -> None:
    app.command("guide")(guide)
