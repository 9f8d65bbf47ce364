"""`michi mcp` driven by the MCP SDK's own stdio client: a real server process on a real repository."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from conftest import Remote, git, run_michi
from mcpkit import HELLO

pytest.importorskip("mcp")

from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

TOOLS = {
    "task_add",
    "task_list",
    "task_show",
    "task_next",
    "task_claim",
    "task_renew",
    "task_release",
    "task_start",
    "task_stop",
    "task_review",
    "task_done",
    "task_annotate",
    "task_modify",
    "task_log",
    "lock_status",
    "sync",
}


def raw_server(repo: Path) -> tuple[subprocess.Popen[bytes], queue.Queue[dict[str, Any]]]:
    """`michi mcp` spoken to in raw JSON-RPC lines: the process, and a queue its messages arrive on."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "michi", "-C", str(repo), "mcp"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    assert proc.stdout is not None
    stdout = proc.stdout
    replies: queue.Queue[dict[str, Any]] = queue.Queue()
    threading.Thread(target=lambda: [replies.put(json.loads(line)) for line in stdout], daemon=True).start()
    return proc, replies


@asynccontextmanager
async def server(repo: Path, agent: str) -> AsyncIterator[ClientSession]:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "michi", "--agent", agent, "-C", str(repo), "mcp"],
        env=dict(os.environ),
        cwd=str(repo),
    )
    with open(os.devnull, "w") as errlog:
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            yield session


async def call(session: ClientSession, tool: str, **args: Any) -> tuple[bool, Any]:
    """(is_error, the JSON document the tool returned)."""
    result = await session.call_tool(tool, args)
    text = result.content[0].text  # type: ignore[union-attr]
    return bool(result.is_error), json.loads(text)


def run(fn: Callable[[], Any]) -> Any:
    return anyio.run(fn)


def trailers(bare: Path) -> list[str]:
    return git(bare, "log", "--format=%B", "main").splitlines()


@pytest.fixture
def work(remote: Remote, cli) -> Path:
    repo = remote.clone("work")
    assert cli(repo, "init").exit_code == 0
    return repo


def test_tools_are_listed_with_agent_descriptions(work: Path) -> None:
    async def main() -> Any:
        async with server(work, "a1") as s:
            return (await s.list_tools()).tools

    tools = run(main)
    assert {t.name for t in tools} == TOOLS
    nxt = next(t for t in tools if t.name == "task_next")
    assert "no_ready_task" in (nxt.description or "")
    assert "claim" in nxt.input_schema["properties"]


def test_add_claim_done_lands_on_the_remote_with_the_agents_trailer(remote: Remote, work: Path) -> None:
    async def main() -> list[tuple[bool, Any]]:
        async with server(work, "agent-7") as s:
            return [
                await call(s, "task_add", description="write the docs", priority="H"),
                await call(s, "task_next", claim=True),
                await call(s, "task_done", id="1"),
                await call(s, "task_log", id="1"),
            ]

    (e1, added), (e2, claimed), (e3, done), (e4, history) = run(main)
    assert not (e1 or e2 or e3 or e4)
    assert history == run_michi(work, "--json", "task", "log", "1").json()
    assert added["id"] == 1 and added["transaction"]["pushed"] is True
    assert claimed["assignee"] == "agent-7" and claimed["state"] == "in_progress"
    assert done["state"] == "done"
    log = trailers(remote.bare)
    assert log.count("Michi-Agent: agent-7") == 3
    # The same object as the CLI's --json gives for the task now.
    shown = run_michi(work, "--json", "task", "show", "1", "--fetch").json()
    assert {k: shown[k] for k in ("id", "state", "version")} == {
        k: done[k] for k in ("id", "state", "version")
    }


def test_an_unknown_id_is_a_tool_error_with_the_clis_code(work: Path) -> None:
    async def main() -> tuple[bool, Any]:
        async with server(work, "a1") as s:
            return await call(s, "task_show", id="99")

    is_error, doc = run(main)
    assert is_error
    cli = run_michi(work, "--json", "task", "show", "99")
    assert doc == cli.json() and doc["error"]["code"] == "task_not_found"


def test_two_servers_racing_next_claim_never_both_win_a_task(remote: Remote, work: Path, cli) -> None:
    for n in range(6):  # the setup runs in-process; the servers below do not
        assert cli(work, "task", "add", f"job {n}").exit_code == 0
    other = remote.clone("other")
    won: dict[str, list[int]] = {"a": [], "b": []}

    async def agent(name: str, repo: Path) -> None:
        async with server(repo, name) as s:
            while True:
                is_error, doc = await call(s, "task_next", claim=True)
                if is_error:
                    assert doc["error"]["code"] == "no_ready_task", doc
                    return
                won[name].append(doc["id"])

    async def main() -> None:
        with anyio.fail_after(240):
            async with anyio.create_task_group() as tg:
                tg.start_soon(agent, "a", work)
                tg.start_soon(agent, "b", other)

    run(main)
    assert not set(won["a"]) & set(won["b"])
    assert sorted(won["a"] + won["b"]) == [1, 2, 3, 4, 5, 6]


def test_cli_commands_and_server_calls_interleave_safely(remote: Remote, work: Path) -> None:
    async def main() -> list[int]:
        ids = []
        async with server(work, "srv") as s:
            for n in range(4):
                cli = subprocess.Popen(
                    [sys.executable, "-m", "michi", "--json", "task", "add", f"cli {n}"],
                    cwd=work,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.DEVNULL,
                    text=True,
                )
                is_error, doc = await call(s, "task_add", description=f"mcp {n}")
                assert not is_error, doc
                out, _ = cli.communicate(timeout=120)
                assert cli.returncode == 0
                ids += [doc["id"], json.loads(out)["id"]]
        return ids

    ids = run(main)
    assert sorted(ids) == list(range(1, 9))
    listed = run_michi(work, "--json", "task", "list", "--fetch").json()
    assert sorted(t["id"] for t in listed) == list(range(1, 9))
    assert git(work, "status", "--porcelain") == ""


def test_a_lock_wait_reports_progress_to_the_client(work: Path) -> None:
    started, go = work.parent / "holder-started", work.parent / "holder-go"
    holder = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "michi",
            "lock",
            "run",
            "--",
            "sh",
            "-c",
            f"touch {started}; while [ ! -e {go} ]; do sleep 0.05; done",
        ],
        cwd=work,
    )
    messages: list[str] = []

    async def progress(done: float, total: float | None, message: str | None) -> None:
        messages.append(message or "")
        go.touch()  # the wait was reported: let the holder finish

    async def main() -> tuple[bool, Any]:
        with anyio.fail_after(120):
            return await add_while_locked()

    async def add_while_locked() -> tuple[bool, Any]:
        async with server(work, "a1") as s:
            while not started.exists():
                await anyio.sleep(0.05)
            result = await s.call_tool(
                "task_add", {"description": "after the lock"}, progress_callback=progress
            )
            return bool(result.is_error), json.loads(result.content[0].text)  # type: ignore[union-attr]

    try:
        is_error, doc = run(main)
    finally:
        go.touch()
        holder.wait(timeout=60)
    assert not is_error, doc
    assert messages and "waiting for the repo lock" in messages[0]


def test_without_the_extra_michi_mcp_exits_2_with_the_install_command(work: Path) -> None:
    code = (
        "import sys; sys.modules['mcp'] = None; from michi.cli.main import main; "
        "sys.exit(main(['--json', 'mcp']))"
    )
    proc = subprocess.run([sys.executable, "-c", code], cwd=work, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    err = json.loads(proc.stdout)["error"]
    assert err["code"] == "mcp_not_installed" and "pip install 'michi[mcp]'" in err["hint"]


def test_the_guide_and_the_contract_are_resources(work: Path) -> None:
    async def main() -> tuple[list[str], str, str]:
        async with server(work, "a1") as s:
            listed = [str(r.uri) for r in (await s.list_resources()).resources]
            guide = (await s.read_resource("michi://guide")).contents[0]
            contract = (await s.read_resource("michi://contract")).contents[0]
            return listed, guide.text, contract.text  # type: ignore[union-attr]

    listed, guide, contract = run(main)
    assert set(listed) == {"michi://guide", "michi://contract"}
    assert guide.rstrip("\n") == run_michi(work, "guide").stdout.rstrip("\n")
    assert json.loads(contract) == run_michi(work, "--json", "guide").json()


def test_arguments_the_cli_would_refuse_are_usage_errors_in_michis_json(work: Path) -> None:
    """A wrong type, an unknown argument or tool, a negative lease: each a tool error whose text is the
    CLI's `{"error": {...}}` with code `usage`, as `--json` prints for a bad option; nothing changes."""
    assert run_michi(work, "--agent", "a1", "task", "add", "one").exit_code == 0
    assert run_michi(work, "--agent", "a1", "task", "claim", "1").exit_code == 0
    before = run_michi(work, "--json", "task", "show", "1").json()["claim_expires"]

    async def main() -> list[tuple[bool, Any]]:
        async with server(work, "a1") as s:
            return [
                await call(s, "task_show", id=1),
                await call(s, "task_add"),
                await call(s, "task_list", state="todo"),
                await call(s, "task_add", description="two", bogus=True),
                await call(s, "no_such_tool"),
                await call(s, "task_renew", id="1", ttl=-1),
                await call(s, "task_add", description="three", wait=-1),  # was bad_config
                await call(s, "sync", wait=-1),
            ]

    for is_error, doc in run(main):
        assert is_error and doc["error"]["code"] == "usage", doc
    assert run_michi(work, "--json", "task", "renew", "1", "--ttl", "-1").json()["error"]["code"] == "usage"
    assert run_michi(work, "--json", "task", "add", "x", "--wait", "-1").json()["error"]["code"] == "usage"
    assert run_michi(work, "--json", "task", "show", "1").json()["claim_expires"] == before
    assert [t["description"] for t in run_michi(work, "--json", "task", "list").json()] == ["one"]


def test_a_domain_whose_name_is_not_utf8_does_not_end_the_server(work: Path) -> None:
    """A task in a folder whose name git gives as bytes that are not UTF-8: `task_list` over every domain
    sent it unencodable and the whole server died (every later call of the agent failed). It answers
    with the byte escaped, as the CLI prints it, and goes on serving."""
    os.mkdir(os.path.join(os.fsencode(work), b"bad\xffname"))
    added = subprocess.run(
        [sys.executable, "-m", "michi", "--json", "task", "add", "there", "--domain", b"bad\xffname"],
        cwd=work,
        capture_output=True,
    )
    assert added.returncode == 0, added.stdout + added.stderr

    async def main() -> list[tuple[bool, Any]]:
        async with server(work, "a1") as s:
            with anyio.fail_after(60):
                return [await call(s, "task_list", all_domains=True), await call(s, "task_show", id="1")]

    (listed_error, listed), (shown_error, shown) = run(main)
    assert not listed_error and listed[0]["domain"] == "bad\udcffname"
    assert not shown_error and shown["domain"] == "bad\udcffname"


def test_a_request_the_sdk_cannot_read_is_answered_and_the_server_reads_on(work: Path) -> None:
    """A line nested deeper than the SDK reads (a few hundred levels), deeper than Python reads, not
    JSON at all, or JSON that is no request: each was logged and never answered, and the agent waited on
    its id for ever. Each gets a JSON-RPC error under its id (null where none can be read), and the
    next request is served."""

    def deep(ident: str, depth: int) -> str:
        nested = "[" * depth + '"x"' + "]" * depth
        params = '{"name":"task_add","arguments":{"description":' + nested + "}}"
        return f'{{"jsonrpc":"2.0","id":{ident},"method":"tools/call","params":{params}}}'

    lines = [
        json.dumps(HELLO),
        '{"jsonrpc":"2.0","method":"notifications/initialized"}',
        deep("2", 300),
        deep('"five thousand"', 5000),
        "this is not json",
        '{"jsonrpc":"2.0","id":7,"method":42}',
        '{"jsonrpc":"2.0","id":9,"method":"tools/list"}',
    ]
    proc, replies = raw_server(work)
    assert proc.stdin is not None
    try:
        proc.stdin.write(("\n".join(lines) + "\n").encode())
        proc.stdin.flush()
        got = [replies.get(timeout=60) for _ in range(6)]
    finally:
        proc.kill()
        proc.wait()
    by_id = {json.dumps(r.get("id")): r for r in got}
    assert set(by_id) == {"1", "2", '"five thousand"', "null", "7", "9"}
    for ident in ("2", '"five thousand"', "null"):
        assert by_id[ident]["error"]["code"] == -32700, by_id[ident]  # parse error
        assert "could not read this request" in by_id[ident]["error"]["message"]
    assert by_id["7"]["error"]["code"] == -32600  # invalid request
    assert {t["name"] for t in by_id["9"]["result"]["tools"]} == TOOLS  # served on after all of them


def test_requests_still_running_when_the_input_ends_are_answered(remote: Remote, work: Path) -> None:
    """`printf REQUESTS | michi mcp`: the input ends while the add runs. The SDK cancels what runs at end
    of input; michi's call, in its thread, still made the change, and its answer was never written (a
    task added, nobody told which). The server answers every request it read, then ends."""
    requests = [
        HELLO,
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
         "params": {"name": "task_add", "arguments": {"description": "piped"}}},
        {"jsonrpc": "2.0", "id": 3, "method": "tools/list"},
    ]  # fmt: skip
    done = subprocess.run(
        [sys.executable, "-m", "michi", "-C", str(work), "mcp"],
        input="".join(json.dumps(r) + "\n" for r in requests).encode(),
        capture_output=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    replies = {r["id"]: r for r in map(json.loads, done.stdout.splitlines())}
    assert set(replies) == {1, 2, 3}, replies
    added = json.loads(replies[2]["result"]["content"][0]["text"])
    assert added["description"] == "piped"
    assert f"Michi-Task: {added['uuid']}" in trailers(remote.bare)


def test_a_call_cancelled_while_it_waits_for_the_lock_stops_and_changes_nothing(work: Path) -> None:
    """The client cancels a `task_add` waiting behind another process's lock. The SDK cannot stop the
    call's thread: it went on waiting, held up every later call of the agent, and made its change once
    the lock was free. It stops waiting at once, the next call is served while the lock is still held,
    and nothing is added."""
    from lockkit import new_lock

    holder = new_lock(work, ttl=300)
    holder.acquire(0)
    proc, replies = raw_server(work)
    assert proc.stdin is not None
    stdin = proc.stdin

    def send(message: dict[str, Any]) -> None:
        stdin.write((json.dumps({"jsonrpc": "2.0", **message}) + "\n").encode())
        stdin.flush()

    def until(wanted: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
        deadline = time.monotonic() + 60  # far below the add's own wait for the lock
        while True:
            reply = replies.get(timeout=max(0.0, deadline - time.monotonic()))
            assert reply.get("id") != 2, reply  # a cancelled request is never answered
            if wanted(reply):
                return reply

    try:
        send(HELLO)
        until(lambda r: r.get("id") == 1)
        send({"method": "notifications/initialized"})
        add = {"name": "task_add", "arguments": {"description": "cancelled", "wait": 3600}}
        send({"id": 2, "method": "tools/call", "params": {**add, "_meta": {"progressToken": "p"}}})
        until(lambda r: r.get("method") == "notifications/progress")  # it waits for the lock
        send({"method": "notifications/cancelled", "params": {"requestId": 2, "reason": "changed my mind"}})
        send({"id": 3, "method": "tools/call", "params": {"name": "task_list", "arguments": {}}})
        listed = until(lambda r: r.get("id") == 3)  # served while the lock is still held
        assert json.loads(listed["result"]["content"][0]["text"]) == []
    finally:
        holder.release()
        stdin.close()
        proc.wait(timeout=60)
    listed_after = run_michi(work, "--json", "task", "list")
    assert listed_after.json() == [], listed_after.stdout


def test_the_clis_notes_follow_the_document_as_texts_of_the_result(work: Path) -> None:
    """What the CLI says on stderr (here: how old the listed data is) reaches the agent in the result,
    after the JSON document it parses: it was a log message, a capability MCP deprecated, and the SDK
    warned on the server's stderr at every such call."""

    async def main() -> Any:
        async with server(work, "a1") as s:
            await call(s, "task_add", description="one")
            return await s.call_tool("task_list", {})

    listed = run(main)
    texts = [c.text for c in listed.content]  # type: ignore[union-attr]
    assert [t["description"] for t in json.loads(texts[0])] == ["one"]
    assert texts[1:] and all(t.startswith("michi: ") for t in texts[1:]), texts
    assert any("tasks as" in t for t in texts[1:]), texts
