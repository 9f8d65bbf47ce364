"""A real `michi mcp` process spoken to in raw JSON-RPC lines, for the tests of its wire and its stop."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

# The first request of a client that speaks raw JSON-RPC lines.
HELLO = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"},
    },
}


class Wire:
    """The server process; what it sends arrives on `replies`, what it says on stderr in `stderr`."""

    def __init__(
        self,
        repo: Path,
        agent: str = "a1",
        hello: dict[str, Any] | None = None,
        env: dict[str, str] | None = None,
    ) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "michi", "--agent", agent, "-C", str(repo), "mcp"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={**os.environ, **(env or {})},
        )
        assert self.proc.stdin is not None and self.proc.stdout is not None and self.proc.stderr is not None
        self.replies: queue.Queue[dict[str, Any]] = queue.Queue()
        self.seen: list[dict[str, Any]] = []
        out, err = self.proc.stdout, self.proc.stderr
        threading.Thread(
            target=lambda: [self.replies.put(json.loads(line)) for line in out], daemon=True
        ).start()
        self._err: list[bytes] = []
        self._err_thread = threading.Thread(target=lambda: self._err.append(err.read()), daemon=True)
        self._err_thread.start()
        self.send(hello or HELLO)
        self.until(lambda r: r.get("id") == (hello or HELLO)["id"])
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, message: dict[str, Any] | str) -> None:
        line = message if isinstance(message, str) else json.dumps(message)
        assert self.proc.stdin is not None
        self.proc.stdin.write(line.encode() + b"\n")
        self.proc.stdin.flush()

    def call(self, ident: Any, tool: str, progress: str | None = None, **arguments: Any) -> None:
        params: dict[str, Any] = {"name": tool, "arguments": arguments}
        if progress is not None:
            params["_meta"] = {"progressToken": progress}
        self.send({"jsonrpc": "2.0", "id": ident, "method": "tools/call", "params": params})

    def until(self, wanted: Callable[[dict[str, Any]], bool], timeout: float = 60) -> dict[str, Any]:
        """The first message `wanted` accepts (every message read is kept in `seen`)."""
        deadline = time.monotonic() + timeout
        while True:
            reply = self.replies.get(timeout=max(0.0, deadline - time.monotonic()))
            self.seen.append(reply)
            if wanted(reply):
                return reply

    def answer(self, ident: Any, timeout: float = 60) -> dict[str, Any]:
        return self.until(lambda r: "method" not in r and r.get("id") == ident, timeout)

    def end(self, timeout: float = 60) -> int:
        """Close its input; its exit status once it ended."""
        assert self.proc.stdin is not None
        if not self.proc.stdin.closed:
            self.proc.stdin.close()
        return self.wait(timeout)

    def wait(self, timeout: float = 60) -> int:
        code = self.proc.wait(timeout=timeout)
        self._err_thread.join(timeout)
        while not self.replies.empty():
            self.seen.append(self.replies.get())
        return code

    @property
    def stderr(self) -> str:
        return b"".join(self._err).decode(errors="replace")

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def document(reply: dict[str, Any]) -> tuple[bool, Any]:
    """(is_error, the JSON document) of a tool call's answer."""
    result = reply["result"]
    return bool(result.get("isError")), json.loads(result["content"][0]["text"])


def initialised(remote: Any, cli: Callable[..., Any]) -> Path:
    """A clone of the test's remote with michi initialised: where a server is started."""
    repo: Path = remote.clone("work")
    assert cli(repo, "init").exit_code == 0
    return repo
