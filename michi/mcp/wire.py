"""The stdio the MCP server speaks on: its own, not the SDK's, so that it can stop (ADR 0011).

The SDK's transport reads stdin in a worker thread it cannot abandon: a server asked to stop (a signal)
could not end before the client sent one more line or closed its end, and a client that closed the
server's stdout ended it with an unhandled `BrokenPipeError` (exit 1, "please report this as a bug"),
after its call's change had landed. Here the lines are read by a daemon thread (`Lines.stop` ends the
input at once, whatever the client does), and output that cannot be written is the output gone
(`on_gone`): what runs finishes, the server ends quietly.

As the SDK's, it claims fd 0 and 1 while it serves: fd 0 reads /dev/null and fd 1 writes to stderr, so
git and hooks run by a call can neither eat the client's requests nor write into its answers.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import queue
import threading
from collections.abc import AsyncIterator, Callable
from typing import Any, BinaryIO

import anyio
import anyio.to_thread
import mcp_types as types
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.shared.message import SessionMessage


class InvalidId(ValueError):
    """A request whose id is neither a string nor an integer (true, null, 8.5, {}): the SDK took it for
    a notification and answered nothing. JSON-RPC 2.0: an invalid request, answered under id null."""


class Lines:
    """The client's lines, read ahead by a daemon thread: a stop ends them at once (a worker thread
    blocked on stdin would hold the process until the client wrote again)."""

    def __init__(self, wire: BinaryIO) -> None:
        self._queue: queue.Queue[bytes | None] = queue.Queue(maxsize=1)
        self._stopped = False
        threading.Thread(target=self._read, args=(wire,), name="michi mcp stdin", daemon=True).start()

    def _read(self, wire: BinaryIO) -> None:
        with contextlib.suppress(OSError, ValueError):
            for line in iter(wire.readline, b""):
                self._queue.put(line)
        self._queue.put(None)

    def stop(self) -> None:
        """No line is taken from now on: the input ends for the server."""
        self._stopped = True
        with contextlib.suppress(queue.Full):
            self._queue.put_nowait(None)  # wakes a wait on an empty queue; a full one is read at once

    def __aiter__(self) -> Lines:
        return self

    async def __anext__(self) -> str:
        line = None if self._stopped else await anyio.to_thread.run_sync(self._queue.get)
        if line is None or self._stopped:
            raise StopAsyncIteration
        return line.decode("utf-8", "replace")


def parsed(line: str) -> SessionMessage | Exception:
    """The line as the SDK reads it, or the exception the reader answers (`michi.mcp.answers`)."""
    try:
        message = types.jsonrpc_message_adapter.validate_json(line, by_name=False)
    except Exception as exc:  # the SDK's transport hands these on the same way
        return _lone_in_arguments(line) or exc
    if isinstance(message, types.JSONRPCNotification) and '"id"' in line and _has_id(line):
        return InvalidId(line)
    return SessionMessage(message)


def _lone_in_arguments(line: str) -> SessionMessage | None:
    """A `tools/call` whose arguments hold a lone surrogate (`"\\ud800"`: valid JSON, but no character),
    read as Python reads JSON, which keeps it: pydantic's parser refused the whole request as a parse
    error, though the server can name the argument (`arguments.problem`, a usage error) and go on. None
    for any other line, a lone surrogate anywhere else included: that stays the parse error."""
    if "\\u" not in line:  # only an escape makes one (the line was decoded from UTF-8)
        return None
    from michi.strictjson import strict_json
    from michi.tasks.serialization import lone_surrogate

    try:
        document = strict_json(line)
        if not isinstance(document, dict) or document.get("method") != "tools/call":
            return None
        params = document.get("params")
        if not isinstance(params, dict) or not lone_surrogate(line, params.get("arguments")):
            return None
        if lone_surrogate(line, {**document, "params": {**params, "arguments": None}}):
            return None
        message = types.jsonrpc_message_adapter.validate_python(document, by_name=False)
    except (ValueError, RecursionError):  # pydantic's ValidationError is a ValueError
        return None
    return SessionMessage(message) if isinstance(message, types.JSONRPCRequest) else None


def _has_id(line: str) -> bool:
    try:
        document = json.loads(line)
    except (ValueError, RecursionError):
        return False
    return isinstance(document, dict) and "id" in document


def _claim(fd: int, standin: Callable[[], int]) -> int:
    """A private duplicate of `fd` to serve the client on; `fd` itself now `standin()`'s."""
    try:
        wire = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 3)
    except OSError:
        return fd  # nothing to claim (a closed descriptor): served as it is
    try:
        other = standin()
        os.dup2(other, fd)
        os.close(other)
    except OSError:
        pass
    return wire


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


@contextlib.asynccontextmanager
async def stdio(
    on_gone: Callable[[], None],
) -> AsyncIterator[tuple[MemoryObjectReceiveStream[Any], MemoryObjectSendStream[SessionMessage], Lines]]:
    """The server's read and write streams on stdin and stdout, and the lines (to stop them)."""
    wire_in = _claim(0, lambda: os.open(os.devnull, os.O_RDONLY))
    wire_out = _claim(1, lambda: os.dup(2))
    lines = Lines(os.fdopen(wire_in, "rb", closefd=False))  # the daemon may still read it at exit
    read_in, read_out = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_in, write_out = anyio.create_memory_object_stream[SessionMessage](0)

    async def reading() -> None:
        async with read_in:
            async for line in lines:
                try:
                    await read_in.send(parsed(line))
                except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                    return  # the server stopped reading

    async def writing() -> None:
        async with write_out:
            async for item in write_out:
                data = item.message.model_dump_json(by_alias=True, exclude_unset=True) + "\n"
                try:
                    await anyio.to_thread.run_sync(_write_all, wire_out, data.encode())
                except OSError:
                    on_gone()  # the client closed our stdout: nothing more can be answered
                    return

    try:
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(reading)
            tasks.start_soon(writing)
            try:
                yield read_out, write_in, lines
            finally:
                lines.stop()
                write_in.close()
    finally:
        for fd, wire in ((0, wire_in), (1, wire_out)):
            if wire != fd:
                with contextlib.suppress(OSError):
                    os.dup2(wire, fd)
