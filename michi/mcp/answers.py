"""Every request the MCP server reads gets an answer (ADR 0011).

A line the SDK cannot read: its stdio transport hands a line it cannot validate (not JSON, or JSON nested
deeper than pydantic reads, a few hundred levels) to the session as an exception, which logs it and
answers nothing: the agent waited for ever on that request's id. This wraps the transport's read stream:
such a line is answered with a JSON-RPC error (parse error, or invalid request) under the id it carried,
read by Python's own parser where it can be (null where it cannot, as JSON-RPC 2.0 says), and the session
reads on.

A batch (a JSON array: MCP 2025-06-18 has none, and michi takes none in any version) is answered
request by request, each with an invalid request error under its id; a request whose id is neither a
string nor an integer (`true`, `null`, `8.5`), which the SDK took for a notification, with one under id
null (`michi.mcp.wire.InvalidId`). Every request with an id gets exactly one answer.

A cancelled call (`notifications/cancelled`) is the server's to settle when it can (`on_cancel`, ADR
0011): withdrawn, its answer is dropped (`Unanswered.silence`); too far along to be withdrawn, it is
answered, as the MCP spec lets a receiver ignore a cancellation of a request that cannot be cancelled.

A request still running when the input ends: the SDK cancels its handler at end of input, and michi's
call, which runs in a thread, went on and did its change but its answer was never written (`printf
REQUESTS | michi mcp` added a task and never said which). The end of input is passed on only once every
request read has been answered, cancelled by the client, or can no longer be answered (the output gone).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from types import TracebackType
from typing import Any, Self

import anyio
import mcp_types as types
from mcp.shared.message import SessionMessage
from pydantic import ValidationError

from michi.mcp.wire import InvalidId

_NOT_JSON = "json_invalid"  # the SDK's complaint about a line that is not JSON (or too deep to read)
# A top-level id that leads the object (alone or after "jsonrpc"), as clients write requests: readable
# where the rest of the line is too deep for any parser, and never a nested object's id.
_LEADING_ID = re.compile(
    r'\s*\{\s*(?:"jsonrpc"\s*:\s*"2\.0"\s*,\s*)?"id"\s*:\s*(-?\d+|"(?:[^"\\]|\\.)*")\s*[,}]'
)


class Unanswered:
    """The ids of the requests read and not answered yet."""

    def __init__(self) -> None:
        self.ids: set[Any] = set()
        self.silenced: set[Any] = set()  # cancelled calls that changed nothing: their answers are dropped
        self.changed = anyio.Event()

    def read(self, item: SessionMessage | Exception) -> None:
        message = item.message if isinstance(item, SessionMessage) else None
        if isinstance(message, types.JSONRPCRequest):
            self.ids.add(message.id)
        elif isinstance(message, types.JSONRPCNotification) and message.method == "notifications/cancelled":
            params = message.params or {}
            self.settled(params.get("requestId") if isinstance(params, dict) else None)

    def settled(self, ident: Any) -> None:
        self.ids.discard(ident)
        self.changed.set()

    def silence(self, ident: Any) -> None:
        """The client cancelled this request and it changed nothing: its answer is not sent."""
        self.silenced.add(ident)

    def gone(self) -> None:
        """Nothing more can be answered (the output is closed)."""
        self.ids.clear()
        self.changed.set()

    async def none_left(self) -> None:
        while self.ids:
            self.changed = anyio.Event()
            await self.changed.wait()


class _ClosedOnExit:
    """`async with` closes the stream (`aclose`), as the SDK's own streams do."""

    async def aclose(self) -> None:
        raise NotImplementedError

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool | None:
        await self.aclose()
        return None


class AnsweringReader(_ClosedOnExit):
    """The transport's read stream, less the lines it could not read (those are answered on `writer`),
    ending only once every request read is answered (`AnsweredWriter` tells). Structurally the SDK's read
    stream (its `ReadStream` protocol: receive, iterate, close)."""

    def __init__(
        self,
        inner: Any,
        writer: Any,
        unanswered: Unanswered | None = None,
        on_cancel: Callable[[Any], bool] | None = None,
    ) -> None:
        self._inner, self._writer = inner, writer
        self._unanswered = unanswered or Unanswered()
        self._on_cancel = on_cancel  # True: the server settles that cancelled call itself

    @property
    def last_context(self) -> Any:
        return getattr(self._inner, "last_context", None)  # the sender's context, as the SDK's stream

    async def receive(self) -> SessionMessage | Exception:
        while True:
            try:
                item: SessionMessage | Exception = await self._inner.receive()
            except anyio.EndOfStream:
                await self._unanswered.none_left()
                raise
            if self._cancel_taken(item):
                continue
            replies = answers(item) if isinstance(item, Exception) else []
            if not replies:
                self._unanswered.read(item)
                return item
            for reply in replies:
                await self._writer.send(SessionMessage(reply))

    def _cancel_taken(self, item: SessionMessage | Exception) -> bool:
        message = item.message if isinstance(item, SessionMessage) else None
        if self._on_cancel is None or not isinstance(message, types.JSONRPCNotification):
            return False
        params = message.params
        if message.method != "notifications/cancelled" or not isinstance(params, dict):
            return False
        return self._on_cancel(params.get("requestId"))

    async def aclose(self) -> None:
        await self._inner.aclose()

    def __aiter__(self) -> AnsweringReader:
        return self

    async def __anext__(self) -> SessionMessage | Exception:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None


class AnsweredWriter(_ClosedOnExit):
    """The transport's write stream, telling `unanswered` of each answer sent. Structurally the SDK's
    write stream (its `WriteStream` protocol: send, close)."""

    def __init__(self, inner: Any, unanswered: Unanswered) -> None:
        self._inner, self._unanswered = inner, unanswered
        self._silenced = unanswered.silenced

    async def send(self, item: SessionMessage) -> None:
        message = item.message
        if isinstance(message, types.JSONRPCResponse | types.JSONRPCError) and message.id in self._silenced:
            self._silenced.discard(message.id)  # a cancelled call that changed nothing: not answered
            self._unanswered.settled(message.id)
            return
        try:
            await self._inner.send(item)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            self._unanswered.gone()
            raise
        if isinstance(item.message, types.JSONRPCResponse | types.JSONRPCError):
            self._unanswered.settled(item.message.id)

    async def aclose(self) -> None:
        self._unanswered.gone()
        await self._inner.aclose()


def answers(exc: Exception) -> list[types.JSONRPCError]:
    """The errors a line the SDK refused deserves: one per request it holds (none for a client's reply)."""
    if isinstance(exc, InvalidId):
        return [_error(None, types.INVALID_REQUEST, "its id must be a string or an integer (MCP)")]
    if not isinstance(exc, ValidationError) or not exc.errors():
        return []
    errors = exc.errors()
    first = errors[0]
    batches = [e["input"] for e in errors if isinstance(e.get("input"), list) and len(e["loc"]) <= 1]
    if batches:  # the line itself is an array (a deeper one is a field's value)
        return _batch(batches[0])
    # The line as read; of JSON that is no message, the object it parsed to: the input of the complaint
    # nearest the top (others name a field's value, or a nested object's).
    objects = sorted((e for e in errors if isinstance(e.get("input"), dict)), key=lambda e: len(e["loc"]))
    line = objects[0]["input"] if objects else first.get("input")
    if isinstance(line, dict):
        document: Any = line
    elif isinstance(line, str | bytes):
        document = _parsed(line)
    else:
        return []
    if isinstance(document, list):
        return _batch(document)
    if _is_reply(document):
        return []  # a response of the client's to a request of ours: there is nobody to answer
    ident = _id(document)
    if first.get("type") == _NOT_JSON:
        why = str(first.get("msg", "not JSON")).removeprefix("Invalid JSON: ")
        message = f"michi could not read this request ({why}): send each request as one line of JSON"
        return [_error(ident, types.PARSE_ERROR, message)]
    return [_error(ident, types.INVALID_REQUEST, "it is JSON but not a JSON-RPC 2.0 request")]


def _batch(batch: list[Any]) -> list[types.JSONRPCError]:
    """A JSON-RPC batch: each request in it refused under its own id (an empty one, once under null)."""
    why = "michi takes no JSON-RPC batches: send each request as its own line"
    if not batch:
        return [_error(None, types.INVALID_REQUEST, why)]
    return [
        _error(_id(item), types.INVALID_REQUEST, why)
        for item in batch
        if not (isinstance(item, dict) and (_is_reply(item) or ("method" in item and "id" not in item)))
    ]


def _is_reply(document: Any) -> bool:
    return (
        isinstance(document, dict)
        and "method" not in document
        and ("result" in document or "error" in document)
    )


def _id(document: Any) -> str | int | None:
    """The request's id, where it is one JSON-RPC allows (else null, as JSON-RPC 2.0 says)."""
    ident = document.get("id") if isinstance(document, dict) else None
    return ident if isinstance(ident, str | int) and not isinstance(ident, bool) else None


def _error(ident: str | int | None, code: int, why: str) -> types.JSONRPCError:
    if code != types.PARSE_ERROR:
        why = f"michi could not read this request: {why}"
    return types.JSONRPCError(jsonrpc="2.0", id=ident, error=types.ErrorData(code=code, message=why))


def _parsed(line: str | bytes) -> Any:
    """The line as Python reads it; of a line too deep for Python too, only an id that leads it."""
    try:
        return json.loads(line)
    except RecursionError:
        found = _LEADING_ID.match(line if isinstance(line, str) else line.decode("utf-8", "replace"))
        return {"id": json.loads(found.group(1))} if found else None
    except ValueError:
        return None
