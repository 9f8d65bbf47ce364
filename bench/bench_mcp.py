"""`task_add` through a warm `michi mcp` server vs a fresh `michi task add` process vs the raw git sequence.

Each side has its own bare remote and clone (like for like); the three are interleaved, so drift in the
machine's load hits them alike. The server is started once, as an agent's MCP client does, and its
start-up is reported separately.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

from _startup import bare_with_clone
from _util import isolated_git_env, row, sh, tempdir
from bench_txn import RAW

N = 20


def main() -> None:
    try:
        import anyio
        from mcp.client.session import ClientSession
        from mcp.client.stdio import StdioServerParameters, stdio_client
    except ImportError:
        print("skipped: the MCP SDK is not installed (pip install 'michi[mcp]')")
        return
    env = isolated_git_env(tempdir("home"))
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # users have bytecode
    root = tempdir("mcp")
    clones = {}
    for side in ("raw", "cli", "mcp"):
        clones[side] = bare_with_clone(root, side, env)
    for side in ("cli", "mcp"):
        sh([sys.executable, "-m", "michi", "init"], clones[side], env)
    counter = iter(range(10**6))
    samples: dict[str, list[float]] = {"raw": [], "cli": [], "mcp": []}

    async def run() -> float:
        params = StdioServerParameters(
            command=sys.executable,
            args=["-m", "michi", "--agent", "bench", "mcp"],
            env=env,
            cwd=str(clones["mcp"]),
        )
        started = time.perf_counter()
        with open(os.devnull, "w") as errlog:
            async with (
                stdio_client(params, errlog=errlog) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                ready = time.perf_counter() - started
                for i in range(N + 1):  # the first round is a warm-up
                    for side in ("raw", "cli", "mcp"):
                        name = f"{side[0]}{next(counter)}"
                        start = time.perf_counter()
                        if side == "raw":
                            sh(["bash", "-c", RAW, "raw", name], clones["raw"], env)
                        elif side == "cli":
                            subprocess.run(
                                [sys.executable, "-m", "michi", "task", "add", name],
                                cwd=clones["cli"],
                                env=env,
                                check=True,
                                capture_output=True,
                            )
                        else:
                            result = await session.call_tool("task_add", {"description": name})
                            assert not result.is_error, result.content
                        if i:
                            samples[side].append(time.perf_counter() - start)
                last = await session.call_tool("task_list", {})
                assert len(json.loads(last.content[0].text)) == N + 1  # type: ignore[union-attr]
        return ready

    ready = anyio.run(run)
    print(row("raw shell sequence (mkdir, pull, add, commit, push)", samples["raw"]))
    print(row("michi task add (fresh process)", samples["cli"], samples["raw"]))
    print(row("task_add through a warm michi mcp server", samples["mcp"], samples["raw"]))
    print(row("  the same, against the fresh process", samples["mcp"], samples["cli"]))
    print(f"server start-up until initialized: {ready * 1000:.0f} ms (paid once per agent session)")


if __name__ == "__main__":
    main()
