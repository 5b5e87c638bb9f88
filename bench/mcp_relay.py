"""What the relay adds to a call of one of the owner's MCP servers (issue 24, point 5),
against a direct call, in one run.

The server is the tests' own stdio MCP server (tests/fakes/mcp_stdio_server.py), held
by Fetch on the host in its sandbox (``Upstream``). **Direct**: ``Upstream.call("echo")``,
the host's own session to it. **Through the relay**: what a CLI in a kennel does, the
``mcp`` package's client speaking streamable HTTP to a real ``ModelRelay`` on its unix
socket (the run's secret as the bearer), which hands ``/mcp/fake`` to the gateway,
which asks the guard and calls the same ``Upstream``. One client session per flow, the
two flows taking turns per round. Figures: p50/p99 per call and the added p50 (ms).

``python -m bench.mcp_relay [N]`` (default 300 calls each) or ``--quick``.
"""

from __future__ import annotations

import argparse
import asyncio
import secrets
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench._common import ratio, summary, table
from kennel.relay import ModelRelay
from orchestrator.mcphost.gateway import Caller, Gateway
from orchestrator.mcphost.settings import McpServerSettings
from orchestrator.mcphost.upstream import Upstream

CALLS = 300
QUICK_CALLS = 40
SERVER = Path(__file__).resolve().parents[1] / "tests" / "fakes" / "mcp_stdio_server.py"


async def _run(n: int) -> dict[str, Any]:
    import httpx2
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    with tempfile.TemporaryDirectory(prefix="fetch-bench-mcp-") as scratch:
        home = Path(scratch)
        settings = McpServerSettings(
            command=(sys.executable, str(SERVER)), binds=(SERVER.parent,), default="allow"
        )
        upstream = Upstream("fake", settings, home=home)

        async def guard(_caller: Caller, _server: str, _tool: str) -> str | None:
            return None

        gateway = Gateway({"fake": upstream}, guard)
        await gateway.start()
        secret = secrets.token_urlsafe(32)
        relay = ModelRelay(
            socket_path=home / "relay.sock",
            upstream="http://127.0.0.1:9",
            provider="anthropic",
            api_key=None,
            secret=secret,
            harness="bench",
            task_id=None,
            log_path=home / "relay.jsonl",
            mcp=gateway.handler(Caller("owner", "terminal:owner", None)),
        )
        await relay.start()
        direct: list[float] = []
        relayed: list[float] = []
        try:
            transport = httpx2.AsyncHTTPTransport(uds=str(home / "relay.sock"))
            async with (
                httpx2.AsyncClient(
                    transport=transport, headers={"Authorization": f"Bearer {secret}"}
                ) as client,
                streamable_http_client(
                    "http://127.0.0.1:4100/mcp/fake", http_client=client
                ) as streams,
                ClientSession(streams[0], streams[1]) as session,
            ):
                await session.initialize()
                for i in range(n + 5):  # 5 warm-up rounds, not counted
                    t = time.perf_counter()
                    await upstream.call("echo", {"text": f"{i}"})
                    a = time.perf_counter() - t
                    t = time.perf_counter()
                    result = await session.call_tool("echo", {"text": f"{i}"})
                    b = time.perf_counter() - t
                    if result.is_error:
                        raise RuntimeError(str(result.content))
                    if i >= 5:
                        direct.append(a * 1000)
                        relayed.append(b * 1000)
        finally:
            await relay.stop()
            await gateway.stop()
    d, r = summary(direct), summary(relayed)
    return {
        "calls": n,
        "direct_ms": d,
        "relay_ms": r,
        "added_p50_ms": r["p50"] - d["p50"],
        "ratio_p50": ratio(r["p50"], d["p50"]),
    }


def run(n: int = CALLS) -> dict[str, Any]:
    return asyncio.run(_run(n))


def render(result: dict[str, Any]) -> str:
    d, r = result["direct_ms"], result["relay_ms"]
    rows = [
        ["direct (host session)", f"{d['p50']:.2f}", f"{d['p99']:.2f}"],
        ["through the relay", f"{r['p50']:.2f}", f"{r['p99']:.2f}"],
        ["added (p50)", f"{result['added_p50_ms']:.2f}", f"{result['ratio_p50']:.1f}x"],
    ]
    return table(
        f"an owner's MCP call, {result['calls']} calls each (ms)", ["flow", "p50", "p99"], rows
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("n", nargs="?", type=int, default=CALLS)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    print(render(run(QUICK_CALLS if args.quick else args.n)))


if __name__ == "__main__":
    main()
