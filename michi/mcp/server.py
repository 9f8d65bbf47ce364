"""`michi mcp`: a stdio MCP server that keeps one agent's michi warm between calls (ADR 0011).

What is kept between calls: the imports, the repository's location and the agent's name. What is not:
everything that could make a call wrong. Each call reads the configuration and the task branch afresh
(the read cache is keyed by the exact commit, so it is never stale), and every changing call is one
full transaction under the repo lock, exactly as a CLI call is: CLI users, other agents and other
servers stay safe alongside this one. Calls are served one at a time (`michi.mcp.calls`); a signal
stops the server (`_stop_on_signals`).
"""

from __future__ import annotations

import inspect
import signal
import sys
import typing
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, ToolAnnotations
from pydantic import ValidationError

from michi import __version__
from michi.errors import UsageError
from michi.mcp import tools
from michi.mcp.arguments import AsSent, problem
from michi.mcp.calls import Server, tool_result

INSTRUCTIONS = (
    "michi is the task tracker of this git repository, shared with other agents and people. Work loop: "
    "task_next with claim=true, do the work, task_done; when task_next fails with no_ready_task and its "
    "counts say open=0, all work is finished. Read the michi://guide resource once for the whole manual."
)


class _Tools(MCPServer[Any]):
    """The SDK's server, but a call it refuses before michi runs (an unknown tool, an unknown argument, an
    argument of the wrong type) is a usage error as the CLI's (exit 2, `usage`), in michi's JSON error
    document, not the SDK's prose: the contract an agent acts on holds for every failure (ADR 0011)."""

    michi: Server  # the tools' server, set by `build`

    async def run_stdio_async(self) -> None:
        """Serve on michi's stdio (`michi.mcp.wire`), with every line it cannot read answered, every
        request read answered before the end of input ends the server, and cancelled calls settled by
        the server (`michi.mcp.answers`), until the input ends or the server is asked to stop."""
        from michi.mcp import wire
        from michi.mcp.answers import AnsweredWriter, AnsweringReader, Unanswered

        def stop() -> None:
            self.michi.stopping.set()
            lines.stop()

        async with wire.stdio(on_gone=stop) as (read_stream, write_stream, lines):
            unanswered = Unanswered()
            self.michi.silence = unanswered.silence
            writer = AnsweredWriter(write_stream, unanswered)
            reader = AnsweringReader(read_stream, writer, unanswered, on_cancel=self.michi.cancel)
            async with anyio.create_task_group() as signals:
                signals.start_soon(_stop_on_signals, stop)
                await self._lowlevel_server.run(
                    reader, writer, self._lowlevel_server.create_initialization_options()
                )
                signals.cancel_scope.cancel()

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        tool = self._tool_manager.get_tool(name)
        if tool is None:
            return _usage(f"no tool '{name}'", "list the tools (tools/list): michi's mirror the CLI's verbs")
        known = tool.parameters.get("properties", {})
        unknown = sorted(set(arguments) - set(known))
        if unknown:
            return _usage(f"{name}: unknown argument {', '.join(map(repr, unknown))}", _takes(name, known))
        wrong = [p for arg, value in arguments.items() if (p := problem(arg, value, known[arg]))]
        if wrong:
            return _usage(f"{name}: {'; '.join(wrong)}", _takes(name, known))
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            if not isinstance(exc.__cause__, ValidationError):
                raise
            problems = "; ".join(
                f"{'.'.join(map(str, err['loc'])) or 'arguments'}: {err['msg']}"
                for err in exc.__cause__.errors()
            )
            return _usage(f"{name}: {problems}", _takes(name, known))


async def _stop_on_signals(stop: Callable[[], None]) -> None:
    """SIGINT, SIGTERM or SIGHUP asks the server to stop (ADR 0011): no call starts any more, a call
    waiting for the repo lock is withdrawn, and one past its wait (a push under way) runs to its end and
    is answered, as the CLI holds the signal for its push (ADR 0004); then the server ends, exit 0. The
    CLI's hold is for the main thread only, and the server's calls run in a worker thread: the signal
    is the server's to take. A second signal changes nothing (SIGKILL ends it at once; the journal
    recovers what it was doing, ADR 0004)."""
    with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM, signal.SIGHUP) as received:
        async for _ in received:
            stop()


def _usage(message: str, hint: str) -> CallToolResult:
    return tool_result(UsageError(message, hint=hint).to_json(), error=True)


def _takes(name: str, known: dict[str, Any]) -> str:
    return f"{name} takes {', '.join(known) or 'no arguments'} (see its input schema)"


def _bind(server: Server, name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    """An async tool with `fn`'s parameters (less the session) plus the MCP context, for the SDK to
    build the tool's input schema from."""
    from pydantic import Field

    hints = typing.get_type_hints(fn)
    params = [
        p.replace(annotation=typing.Annotated[hints[p.name], Field(description=tools.PARAMS[p.name])])
        for p in inspect.signature(fn).parameters.values()
        if p.name != "s"
    ]

    async def tool(ctx: Context, **kwargs: Any) -> CallToolResult:
        result: CallToolResult = await server.call(name, fn, ctx, kwargs, tools.TOOLS[name][2])
        return result

    ctx_param = inspect.Parameter("ctx", inspect.Parameter.KEYWORD_ONLY, annotation=Context)
    kw_params = [p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in params]
    tool.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [*kw_params, ctx_param], return_annotation=CallToolResult
    )
    tool.__annotations__ = {
        **{p.name: p.annotation for p in kw_params},
        "ctx": Context,
        "return": CallToolResult,
    }
    tool.__name__ = name
    return tool


def build(cwd: Path, agent: str | None) -> MCPServer[Any]:
    server = Server(cwd, agent)
    app = _Tools(name="michi", version=__version__, instructions=INSTRUCTIONS, log_level="WARNING")
    app.michi = server
    for name, (fn, description, changes) in tools.TOOLS.items():
        app.add_tool(
            _bind(server, name, fn),
            name=name,
            description=description + tools.ERRORS,
            annotations=ToolAnnotations(read_only_hint=not changes, destructive_hint=False),
            structured_output=False,
        )
        added = app._tool_manager.get_tool(name)
        assert added is not None
        added.fn_metadata = AsSent.model_construct(**dict(added.fn_metadata))
    _resources(app)
    return app


def _resources(app: MCPServer[Any]) -> None:
    from michi.mcp import resources

    for uri, (name, mime, description, read) in resources.RESOURCES.items():
        app.resource(uri, name=name, mime_type=mime, description=description)(_reader(read))


def _reader(read: Callable[[], str]) -> Callable[[], str]:
    """A resource function with no parameters (the SDK maps parameters to URI template variables)."""

    def reader() -> str:
        return read()

    return reader


def serve(cwd: Path, agent: str | None) -> None:
    """Serve on stdin/stdout until the client closes its input or the server is asked to stop (a signal,
    or its output gone). Nothing else may write to stdout."""
    sys.stdout.flush()
    build(cwd, agent).run("stdio")
