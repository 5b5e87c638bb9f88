"""The memory MCP server on the relay's socket: the wire a CLI in the kennel speaks
(streamable HTTP, JSON-RPC), through the real ModelRelay on a unix socket."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from kennel.relay import ModelRelay
from tests.fakes.model_server import ScriptedModelServer
from tests.memory.conftest import Running

SECRET = "run-secret-of-the-mcp-tests"  # the bearer a run's CLI sends (RelaySpec.secret)
HEADERS = {
    "Authorization": f"Bearer {SECRET}",
    "Accept": "application/json, text/event-stream",
    "Content-Type": "application/json",
    "Host": "127.0.0.1:4100",
}


class Client:
    def __init__(self, session: aiohttp.ClientSession) -> None:
        self.session = session
        self.next_id = 0

    async def call(
        self, method: str, params: dict[str, Any] | None = None, path: str = "/mcp"
    ) -> tuple[int, Any]:
        self.next_id += 1
        body = {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params or {}}
        async with self.session.post(f"http://relay{path}", json=body, headers=HEADERS) as resp:
            text = await resp.text()
            return resp.status, json.loads(text) if text else None

    async def tool(self, name: str, **args: Any) -> str:
        status, reply = await self.call("tools/call", {"name": name, "arguments": args})
        assert status == 200, reply
        assert not reply["result"].get("isError"), reply
        return str(reply["result"]["content"][0]["text"])


@pytest.fixture
async def client(
    running: Running,
    model: ScriptedModelServer,
    tmp_path: Path,
) -> AsyncIterator[Client]:
    await running.memory.mcp_ready()  # started in the background, off the start-up path
    handler = running.memory.mcp_handler("harness:test-cli")
    assert handler is not None
    sock = tmp_path / "relay.sock"
    relay = ModelRelay(
        socket_path=sock,
        upstream=model.url,
        provider="anthropic",
        api_key="sk-real",
        secret=SECRET,
        harness="test-cli",
        task_id=7,
        log_path=tmp_path / "relay.jsonl",
        mcp=handler,
    )
    async with (
        relay,
        aiohttp.ClientSession(connector=aiohttp.UnixConnector(path=str(sock))) as session,
    ):
        c = Client(session)
        status, init = await c.call(
            "initialize",
            {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "test", "version": "1"},
            },
        )
        assert status == 200 and init["result"]["serverInfo"]["name"] == "fetch-memory"
        yield c


async def test_tools_listed_and_round_trip(client: Client, running: Running) -> None:
    status, listed = await client.call("tools/list")
    assert status == 200
    assert {t["name"] for t in listed["result"]["tools"]} == {
        "memory_search",
        "memory_read",
        "memory_write",
    }
    saved = await client.tool(
        "memory_write",
        content="The build needs NODE_OPTIONS=--max-old-space-size=4096",
        type="learning",
        tags=["build"],
    )
    assert saved.startswith("saved as memory #")
    item_id = int(saved.rsplit("#", 1)[1])
    item = await running.memory.get(item_id)
    assert item is not None and item.source == "harness:test-cli" and item.kind == "learning"
    found = json.loads(await client.tool("memory_search", query="build out of memory node"))
    assert found["mode"].startswith("hybrid")
    assert found["hits"][0]["id"] == item_id and "NODE_OPTIONS" in found["hits"][0]["content"]
    missing = await client.tool("memory_read", id=999)
    assert "no archived conversation #999" in missing


async def test_writes_per_run_are_capped(client: Client) -> None:
    from orchestrator.memory.mcp_server import MAX_WRITES_PER_RUN

    for i in range(MAX_WRITES_PER_RUN):
        assert "memory #" in await client.tool(
            "memory_write", content=f"note {i} " * 3 + f"unique{i} topic{i * 7}"
        )
    assert "refused" in await client.tool("memory_write", content="one too many")


async def test_other_paths_still_reach_the_model(
    client: Client, model: ScriptedModelServer
) -> None:
    async with client.session.post(
        "http://relay/v1/messages",
        json={"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}]},
        headers={"x-api-key": SECRET},
    ) as resp:
        assert resp.status == 200
    assert model.model_requests[-1].headers["x-api-key"] == "sk-real"
    assert not any(r.path == "/mcp" for r in model.requests)  # /mcp never leaves the host


async def test_foreign_host_header_is_refused(client: Client) -> None:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    async with client.session.post(
        "http://relay/mcp", json=body, headers={**HEADERS, "Host": "evil.example:80"}
    ) as resp:
        assert resp.status in (403, 421)
