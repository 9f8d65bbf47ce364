"""The calls of one MCP server: one at a time, each in a worker thread, each settled once (ADR 0011).

A call waits for the gate, then runs the tool's function in a worker thread, where a wait for the repo
lock reports progress to the client. A call the client cancelled, or one the server's stop finds
waiting, is withdrawn while it only waits; one whose change may land is answered whatever happened.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import anyio.from_thread
import anyio.to_thread
from mcp.server.mcpserver import Context
from mcp.types import CallToolResult, TextContent

from michi.cli.progress import describe_wait
from michi.errors import Interrupted, MichiError, unexpected
from michi.session import Session

PROGRESS_EVERY = 1.0  # seconds between progress notifications while a call waits for the repo lock


class Call:
    """One tool call in flight: whether the client cancelled it, and whether it was withdrawn (its offer
    to the lock's holder taken back, nothing changed: only then is a cancelled change's answer dropped)."""

    def __init__(self) -> None:
        self.cancelled = threading.Event()
        self.withdrawal: Interrupted | None = None  # what the lock wait raised to withdraw it
        self.withdrawn = False  # ... and the call ended with it
        self.finished = False


class Server:
    """The tools bound to one repository and agent, and the one-at-a-time gate in front of them."""

    def __init__(self, cwd: Path, agent: str | None) -> None:
        self.cwd = cwd
        self.agent = agent
        self.gate = anyio.Lock()
        self.calls: dict[Any, Call] = {}  # by request id
        self.stopping = threading.Event()  # a signal, or the output gone: no call starts any more
        self.silence: Callable[[Any], None] = lambda ident: None  # the transport's (`answers.Unanswered`)

    def cancel(self, ident: Any) -> bool:
        """The client cancelled request `ident`: True when it is a call of ours, which settles it."""
        call = self.calls.get(ident) if isinstance(ident, str | int) and not isinstance(ident, bool) else None
        if call is None:
            return False
        call.cancelled.set()
        return True

    def session(self, tool: str, on_wait: Callable[..., None] | None) -> Session:
        s = Session(cwd=self.cwd, json=True, agent=self.agent, argv=["mcp", tool])
        s.on_wait = on_wait
        return s

    async def call(
        self, name: str, fn: Callable[..., Any], ctx: Context, kwargs: dict[str, Any], changes: bool
    ) -> Any:
        ident = ctx.request_context.request_id
        mine = Call()
        self.calls[ident] = mine
        try:
            result = await self._gated(name, fn, ctx, kwargs, mine)
        finally:
            if self.calls.get(ident) is mine:
                del self.calls[ident]
        # A cancelled call is answered only when it may have changed something (MCP lets a receiver
        # ignore the cancellation of a request that cannot be cancelled): the agent must learn of a
        # change that landed (ADR 0011), or a retry repeats it.
        if mine.cancelled.is_set() and (mine.withdrawn or not changes):
            self.silence(ident)
        return result

    async def _gated(
        self, name: str, fn: Callable[..., Any], ctx: Context, kwargs: dict[str, Any], mine: Call
    ) -> Any:
        reported = [-PROGRESS_EVERY]
        s = self.session(name, None)

        def on_wait(holder: Any, waited: float) -> None:
            if mine.cancelled.is_set() or self.stopping.is_set():
                # The client cancelled the call, or the server is asked to stop: it stops waiting for the
                # lock as Ctrl-C stops a command, its offer to the holder withdrawn (ADR 0017). Taken by
                # the holder already, before or as it is withdrawn, it can no longer be: the transaction
                # waits on for the holder's answer (this raise no longer ends that wait), which is sent.
                why = "cancelled" if mine.cancelled.is_set() else "withdrawn: the server is stopping"
                mine.withdrawal = Interrupted(
                    f"the call was {why} while it waited for the repo lock",
                    hint="nothing was changed; call again when it is wanted",
                )
                raise mine.withdrawal
            if waited - reported[0] < PROGRESS_EVERY:
                return
            reported[0] = waited
            message = describe_wait(holder, waited)
            anyio.from_thread.run(lambda: ctx.report_progress(waited, None, message))

        s.on_wait = on_wait

        def run() -> Any:
            try:
                return fn(s, **kwargs)
            except MichiError as exc:
                mine.withdrawn = exc is mine.withdrawal
                return tool_result(exc.to_json(), error=True)
            except Exception as exc:  # the JSON contract holds for bugs too, as in the CLI
                return tool_result(unexpected(exc).to_json(), error=True)

        async with self.gate:
            if mine.cancelled.is_set() or self.stopping.is_set():  # it waited for the gate: never run
                mine.withdrawn = True
                why = "cancelled" if mine.cancelled.is_set() else "not run: the server is stopping"
                stopped = Interrupted(f"the call was {why}", hint="nothing was changed; call again")
                return tool_result(stopped.to_json(), error=True)
            async with anyio.create_task_group() as watching:
                watching.start_soon(_until_cancelled, mine)
                try:
                    result = await anyio.to_thread.run_sync(run)
                finally:
                    mine.finished = True
                    watching.cancel_scope.cancel()
        if isinstance(result, CallToolResult):
            return result  # an error, as its JSON document
        # The CLI's notes on stderr (how old the data is, what was left alone), each a text after the
        # document: MCP's log messages, which carried them, are deprecated (SEP-2577).
        notes = [f"michi: {note}" for note in getattr(result, "notes", None) or []]
        return tool_result(result.to_json(), error=bool(result.exit_code), notes=notes)


async def _until_cancelled(call: Call) -> None:
    """Cancels `call` once the SDK cancels its handler (a cancellation the transport did not hand to
    `Server.cancel`); the call's own end cancels this task too, and then changes nothing."""
    try:
        await anyio.sleep_forever()
    finally:
        if not call.finished:
            call.cancelled.set()


def tool_result(document: Any, error: bool, notes: list[str] | None = None) -> CallToolResult:
    """The JSON document as the first text (what an agent parses), then each note as one more."""
    body = json.dumps(document, ensure_ascii=False, separators=(",", ":"))
    texts = [body, *(notes or ())]
    return CallToolResult(content=[TextContent(type="text", text=_utf8(t)) for t in texts], is_error=error)


def _utf8(text: str) -> str:
    """`text` with each lone surrogate (a path git gave as bytes that are not UTF-8, e.g. a folder name)
    as its `\\udcff` escape, as the CLI prints it: sent as it was, it could not be encoded and ended the
    whole server (every later call of the agent failed)."""
    return text if text.isascii() else text.encode("utf-8", "backslashreplace").decode("utf-8")
