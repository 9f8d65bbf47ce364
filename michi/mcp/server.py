"""`michi mcp`: a stdio MCP server that keeps one agent's michi warm between calls (ADR 0011).

What is kept between calls: the imports, the repository's location and the agent's name. What is not:
everything that could make a call wrong. Each call reads the configuration and the task branch afresh
(the read cache is keyed by the exact commit, so it is never stale), and every changing call is one
full transaction under the repo lock, exactly as a CLI call is: CLI users, other agents and other
servers stay safe alongside this one. Calls are served one at a time.
"""

from __future__ import annotations

import inspect
import json
import sys
import threading
import typing
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import anyio.from_thread
import anyio.to_thread
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import ValidationError

from michi import __version__
from michi.cli.progress import describe_wait
from michi.errors import Interrupted, MichiError, UsageError, unexpected
from michi.mcp import tools
from michi.session import Session

PROGRESS_EVERY = 1.0  # seconds between progress notifications while a call waits for the repo lock

INSTRUCTIONS = (
    "michi is the task tracker of this git repository, shared with other agents and people. Work loop: "
    "task_next with claim=true, do the work, task_done; when task_next fails with no_ready_task and its "
    "counts say open=0, all work is finished. Read the michi://guide resource once for the whole manual."
)


class Server:
    """The tools bound to one repository and agent, and the one-at-a-time gate in front of them."""

    def __init__(self, cwd: Path, agent: str | None) -> None:
        self.cwd = cwd
        self.agent = agent
        self.gate = anyio.Lock()

    def session(self, tool: str, on_wait: Callable[..., None] | None) -> Session:
        s = Session(cwd=self.cwd, json=True, agent=self.agent, argv=["mcp", tool])
        s.on_wait = on_wait
        return s

    async def call(self, name: str, fn: Callable[..., Any], ctx: Context, kwargs: dict[str, Any]) -> Any:
        reported = [-PROGRESS_EVERY]
        cancelled = threading.Event()

        def on_wait(holder: Any, waited: float) -> None:
            if cancelled.is_set():
                # The client cancelled the call, whose thread the SDK cannot stop: it stops waiting for the
                # lock as Ctrl-C stops a command (its change withdrawn, or, taken by the holder already,
                # said to land), and the next call can start.
                raise Interrupted(
                    "the call was cancelled while it waited for the repo lock",
                    hint="nothing was changed; call again when it is wanted",
                )
            if waited - reported[0] < PROGRESS_EVERY:
                return
            reported[0] = waited
            message = describe_wait(holder, waited)
            anyio.from_thread.run(lambda: ctx.report_progress(waited, None, message))

        def run() -> Any:
            try:
                return fn(self.session(name, on_wait), **kwargs)
            except MichiError as exc:
                return _text(exc.to_json(), error=True)
            except Exception as exc:  # the JSON contract holds for bugs too, as in the CLI
                return _text(unexpected(exc).to_json(), error=True)

        async with self.gate, anyio.create_task_group() as watching:
            watching.start_soon(_until_cancelled, cancelled)
            try:
                result = await anyio.to_thread.run_sync(run)
            finally:
                watching.cancel_scope.cancel()
        if isinstance(result, CallToolResult):
            return result  # an error, as its JSON document
        # The CLI's notes on stderr (how old the data is, what was left alone), each a text after the
        # document: MCP's log messages, which carried them, are deprecated (SEP-2577).
        notes = [f"michi: {note}" for note in getattr(result, "notes", None) or []]
        return _text(result.to_json(), error=bool(result.exit_code), notes=notes)


async def _until_cancelled(cancelled: threading.Event) -> None:
    """Sets `cancelled` once this task is cancelled: by the SDK, when the client cancels the call (its
    handler's scope), or by the call itself, done (then nothing reads it)."""
    try:
        await anyio.sleep_forever()
    finally:
        cancelled.set()


class _Tools(MCPServer[Any]):
    """The SDK's server, but a call it refuses before michi runs (an unknown tool, an unknown argument, an
    argument of the wrong type) is a usage error as the CLI's (exit 2, `usage`), in michi's JSON error
    document, not the SDK's prose: the contract an agent acts on holds for every failure (ADR 0011)."""

    async def run_stdio_async(self) -> None:
        """The SDK's stdio transport, with every line it cannot read answered, and every request read
        answered before the end of input ends the server (`michi.mcp.answers`)."""
        from mcp.server.stdio import stdio_server

        from michi.mcp.answers import AnsweredWriter, AnsweringReader, Unanswered

        async with stdio_server() as (read_stream, write_stream):
            unanswered = Unanswered()
            writer = AnsweredWriter(write_stream, unanswered)
            await self._lowlevel_server.run(
                AnsweringReader(read_stream, writer, unanswered),
                writer,
                self._lowlevel_server.create_initialization_options(),
            )

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        tool = self._tool_manager.get_tool(name)
        if tool is None:
            return _usage(f"no tool '{name}'", "list the tools (tools/list): michi's mirror the CLI's verbs")
        known = tool.parameters.get("properties", {})
        unknown = sorted(set(arguments) - set(known))
        if unknown:
            return _usage(f"{name}: unknown argument {', '.join(map(repr, unknown))}", _takes(name, known))
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


def _usage(message: str, hint: str) -> CallToolResult:
    return _text(UsageError(message, hint=hint).to_json(), error=True)


def _takes(name: str, known: dict[str, Any]) -> str:
    return f"{name} takes {', '.join(known) or 'no arguments'} (see its input schema)"


def _text(document: Any, error: bool, notes: list[str] | None = None) -> CallToolResult:
    """The JSON document as the first text (what an agent parses), then each note as one more."""
    body = json.dumps(document, ensure_ascii=False, separators=(",", ":"))
    texts = [body, *(notes or ())]
    return CallToolResult(content=[TextContent(type="text", text=_utf8(t)) for t in texts], is_error=error)


def _utf8(text: str) -> str:
    """`text` with each lone surrogate (a path git gave as bytes that are not UTF-8, e.g. a folder name)
    as its `\\udcff` escape, as the CLI prints it: sent as it was, it could not be encoded and ended the
    whole server (every later call of the agent failed)."""
    return text if text.isascii() else text.encode("utf-8", "backslashreplace").decode("utf-8")


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
        result: CallToolResult = await server.call(name, fn, ctx, kwargs)
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
    app: MCPServer[Any] = _Tools(
        name="michi", version=__version__, instructions=INSTRUCTIONS, log_level="WARNING"
    )
    for name, (fn, description, changes) in tools.TOOLS.items():
        app.add_tool(
            _bind(server, name, fn),
            name=name,
            description=description + tools.ERRORS,
            annotations=ToolAnnotations(read_only_hint=not changes, destructive_hint=False),
            structured_output=False,
        )
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
    """Serve on stdin/stdout until the client closes the stream. Nothing else may write to stdout."""
    sys.stdout.flush()
    build(cwd, agent).run("stdio")
