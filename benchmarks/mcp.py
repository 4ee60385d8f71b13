"""MCP call latency, p50/p95, over stdio and streamable HTTP, against GEM's bundled MCP server.

    python benchmarks/mcp.py [--calls 300] [--episodes 20]

Workloads, all in this process against the same servers:

* ``MCPTool`` (ours): one session per episode, calls go through ``execute_action`` (parse, call,
  render). ``--calls`` calls of ``calculate`` in one episode; then ``--episodes`` episodes of
  ``reset()`` + an immediate call, to show what opening the session costs; then ``reset()`` alone
  (the new session opens in the background, overlapping the agent's first turn).
* baseline: a client that connects, initializes and closes a session for every call (what
  gem-llm 0.1.0's MCPTool does with ``async with client`` around each call), with the raw SDK.

gem-llm 0.1.0 itself cannot be run side by side here: its MCP tool needs ``fastmcp``, which its venv
does not have. Latencies are wall-clock milliseconds per call; ratio = baseline p50 / ours p50.
"""

from __future__ import annotations

import os
import sys

# This file is named mcp.py: keep its folder off sys.path so ``import mcp`` finds the SDK.
_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.getcwd()) != _HERE]

import argparse  # noqa: E402
import asyncio  # noqa: E402
import socket  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import time  # noqa: E402
from typing import Callable  # noqa: E402

STDIO = {"command": sys.executable, "args": ["-m", "gem.services.mcp"]}
ACTION = '<tool_call>{"name": "calculate", "arguments": {"expression": "(2 + 3) * 7"}}</tool_call>'


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def timed(fn: Callable[[], object], n: int) -> list[float]:
    out = []
    for _ in range(n):
        start = time.perf_counter()
        fn()
        out.append((time.perf_counter() - start) * 1000)
    return out


def start_http_server() -> tuple[subprocess.Popen, str]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen(
        [sys.executable, "-m", "gem.services.mcp", "--transport", "http", "--port", str(port)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    for _ in range(300):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return proc, f"http://127.0.0.1:{port}/mcp"
        except OSError:
            time.sleep(0.1)
    proc.kill()
    raise RuntimeError("the MCP HTTP server did not start")


async def connect_per_call(config: object) -> None:
    """Open a session, call once, close (the baseline)."""
    from contextlib import AsyncExitStack

    from mcp import ClientSession, StdioServerParameters, stdio_client
    from mcp.client.streamable_http import streamable_http_client

    async with AsyncExitStack() as stack:
        if isinstance(config, dict):
            transport = stdio_client(StdioServerParameters(command=config["command"], args=config["args"]),
                                     errlog=stack.enter_context(open(os.devnull, "w")))
        else:
            transport = streamable_http_client(config)
        streams = await stack.enter_async_context(transport)
        session = await stack.enter_async_context(ClientSession(streams[0], streams[1]))
        await session.initialize()
        result = await session.call_tool("calculate", {"expression": "(2 + 3) * 7"})
        assert result.content[0].text == "35"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--episodes", type=int, default=20)
    parser.add_argument("--baseline-calls", type=int, default=20)
    args = parser.parse_args()

    from gem.tools.mcp_tool import MCPTool

    proc, url = start_http_server()
    rows = []
    try:
        for transport, config in (("stdio", STDIO), ("http", url)):
            tool = MCPTool(config)
            try:
                tool.execute_action(ACTION)  # warm
                calls = timed(lambda tool=tool: tool.execute_action(ACTION), args.calls)

                def episode(tool: MCPTool = tool) -> None:
                    tool.reset()
                    tool.execute_action(ACTION)

                episodes = timed(episode, args.episodes)
                resets = []
                for _ in range(args.episodes):
                    resets += timed(tool.reset, 1)  # returns before the new session is open
                    tool.execute_action(ACTION)  # (untimed) the agent's first call, after its turn
            finally:
                tool.close()
            baseline = timed(lambda config=config: asyncio.run(connect_per_call(config)), args.baseline_calls)
            rows.append((transport, calls, episodes, resets, baseline))
    finally:
        proc.terminate()
        proc.wait(10)

    print(f"{'transport':<10}{'workload':<40}{'n':>5}{'p50 ms':>10}{'p95 ms':>10}")
    for transport, calls, episodes, resets, baseline in rows:
        for name, values in (
            ("MCPTool call, session open", calls),
            ("MCPTool reset + first call at once", episodes),
            ("MCPTool reset() alone (prefetch)", resets),
            ("baseline: connect + call + close", baseline),
        ):
            print(f"{transport:<10}{name:<40}{len(values):>5}{percentile(values, 0.5):>10.2f}{percentile(values, 0.95):>10.2f}")
        ratio = statistics.median(baseline) / statistics.median(calls)
        print(f"{transport:<10}{'ratio baseline/ours (p50 per call)':<40}{'':>5}{ratio:>10.1f}x")


if __name__ == "__main__":
    main()
