"""The owner's MCP servers (orchestrator/mcphost/) through real parts: a real stdio MCP
server (tests/fakes/mcp_stdio_server.py) run in its bubblewrap sandbox, the gateway's
``/mcp/<server>`` served over real HTTP, and the ``mcp`` package's real client calling
it as a CLI would. The guard decides per call; a slow, failing, flooding or dead server
is cut off with one line and the gateway goes on."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from kennel.bwrap import probe
from orchestrator.mcphost.gateway import Caller, Gateway
from orchestrator.mcphost.settings import McpServerSettings
from orchestrator.mcphost.upstream import McpDown, Upstream
from tests.fakes.require import missing

SERVER = Path(__file__).resolve().parents[1] / "fakes" / "mcp_stdio_server.py"
CALLER = Caller("owner", "terminal:owner", 7)


def _settings(*extra: str, **kw: Any) -> McpServerSettings:
    # The interpreter's own folder and the fake's are bound read-only; nothing else.
    return McpServerSettings(
        command=(sys.executable, str(SERVER), *extra),
        binds=(SERVER.parent,),
        env={"FAKE_SECRET": "${FETCH_TEST_MCP_SECRET}"},
        **kw,
    )


@pytest.fixture(autouse=True)
def _sandbox(monkeypatch: pytest.MonkeyPatch) -> None:
    why = probe()
    if why is not None:
        missing(f"bwrap cannot run here: {why}")
    monkeypatch.setenv("FETCH_TEST_MCP_SECRET", "s3cret-from-env")


class Served:
    def __init__(self, gateway: Gateway, url: str, decisions: list[tuple[str, str]]) -> None:
        self.gateway = gateway
        self.url = url
        self.decisions = decisions
        self.calls: list[Mapping[str, Any]] = []

    async def call(self, server: str, tool: str, args: dict[str, Any]) -> tuple[bool, str]:
        from mcp import ClientSession
        from mcp.client.streamable_http import streamable_http_client

        async with (
            streamable_http_client(f"{self.url}/mcp/{server}") as streams,
            ClientSession(streams[0], streams[1]) as session,
        ):
            await session.initialize()
            listed = await session.list_tools()
            assert tool in {t.name for t in listed.tools} or tool == "nosuch"
            result = await session.call_tool(tool, args)
            text = "".join(getattr(c, "text", "") for c in result.content)
            return bool(result.is_error), text


@pytest.fixture
async def served(tmp_path: Path) -> AsyncIterator[Served]:
    home = tmp_path / "home"
    upstreams = {
        "fake": Upstream("fake", _settings(timeout_seconds=3), home=home),
        "broken": Upstream("broken", _settings("--die", start_seconds=10), home=home),
    }
    decisions: list[tuple[str, str]] = []

    async def guard(caller: Caller, server: str, tool: str) -> str | None:
        decisions.append((server, tool))
        return "🔒 the owner said no" if tool == "whoami" else None

    gateway = Gateway(upstreams, guard)
    served_calls: list[Mapping[str, Any]] = []
    gateway._on_call = lambda caller, entry: served_calls.append(entry)
    await gateway.start()
    app = web.Application()
    handler = gateway.handler(CALLER)
    app.router.add_route("*", "/mcp/{name}", handler)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    out = Served(gateway, f"http://127.0.0.1:{port}", decisions)
    out.calls = served_calls
    try:
        yield out
    finally:
        await runner.cleanup()
        await gateway.stop()


async def test_calls_go_through_the_guard_to_the_sandboxed_server(served: Served) -> None:
    assert await served.call("fake", "echo", {"text": "hi"}) == (False, "echo: hi")
    # The server has its secret from Fetch's environment (the kennel never does).
    assert await served.call("fake", "secret", {}) == (False, "s3cret-from-env")
    refused = await served.call("fake", "whoami", {})
    assert refused == (True, "🔒 the owner said no")
    assert served.decisions == [("fake", "echo"), ("fake", "secret"), ("fake", "whoami")]
    assert [c["outcome"] for c in served.calls] == ["ok", "ok", "refused"]
    listing = "\n".join(served.gateway.listing())
    assert "mcp:fake — echo, slow, big, secret, fetch_url, crash, whoami" in listing
    # The one that could not start is named with why, once, and does not stop the rest.
    assert "mcp:broken — down:" in listing and "no database" in listing, listing


async def test_a_server_in_its_sandbox_reaches_nothing(served: Served, tmp_path: Path) -> None:
    ok, text = await served.call("fake", "fetch_url", {"url": "http://127.0.0.1:9/"})
    assert not ok and text.startswith("failed:"), text  # no network at all
    home = tmp_path / "home"
    ok, text = await served.call("fake", "secret", {})
    assert str(home) not in text
    if os.geteuid() == 0:
        # As root, the server runs as the kennel's uid, never root.
        upstream = served.gateway._upstreams["fake"]
        result = await upstream.call("whoami", {})
        assert "uid=0 " not in result.content[0].text


async def test_slow_and_flooding_servers_are_cut_off(served: Served) -> None:
    ok, text = await served.call("fake", "big", {"kb": 400})
    assert ok and "over the limit" in text, text
    ok, text = await served.call("fake", "slow", {"seconds": 10})
    assert ok and "cut off" in text and "did not answer within 3 s" in text, text
    # Cut off: later calls are told why at once; the gateway itself goes on.
    ok, text = await served.call("fake", "echo", {"text": "again"})
    assert ok and "not available" in text
    assert "mcp:fake — down: slow did not answer within 3 s" in "\n".join(served.gateway.listing())


async def test_a_server_reaches_only_its_declared_hosts(tmp_path: Path) -> None:
    """``hosts``: the server's sandbox gets the egress proxy; an allowed local server is
    reached, another local port is refused (403), nothing is reached directly."""
    hits: dict[str, list[str]] = {"ok": [], "other": []}

    async def serve(name: str) -> tuple[web.AppRunner, int]:
        async def handle(request: web.Request) -> web.Response:
            hits[name].append(request.path)
            return web.Response(text=f"hello from {name}")

        app = web.Application()
        app.router.add_get("/{tail:.*}", handle)
        runner = web.AppRunner(app)
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", 0).start()
        return runner, runner.addresses[0][1]

    ok, ok_port = await serve("ok")
    other, other_port = await serve("other")
    upstream = Upstream("net", _settings(hosts=(f"127.0.0.1:{ok_port}",)), home=tmp_path / "home")
    await upstream.start()
    try:
        assert upstream.state == "up", upstream.why
        got = await upstream.call("fetch_url", {"url": f"http://127.0.0.1:{ok_port}/x"})
        assert got.content[0].text == "200 hello from ok", got.content
        got = await upstream.call("fetch_url", {"url": f"http://127.0.0.1:{other_port}/y"})
        assert "403" in got.content[0].text, got.content
    finally:
        await upstream.stop()
        await ok.cleanup()
        await other.cleanup()
    assert hits == {"ok": ["/x"], "other": []}


async def test_garbage_and_a_crash_mid_call_cut_the_server_off(tmp_path: Path) -> None:
    """Junk on stdout before serving is skipped (the server still answers); a server that
    prints garbage and dies during a call is cut off with one line, at once."""
    upstream = Upstream("g", _settings("--garbage", timeout_seconds=20), home=tmp_path / "h")
    await upstream.start()
    try:
        assert upstream.state == "up", upstream.why
        assert (await upstream.call("echo", {"text": "x"})).content[0].text == "echo: x"
        started = asyncio.get_running_loop().time()
        with pytest.raises(McpDown) as cut:
            await upstream.call("crash", {})
        assert asyncio.get_running_loop().time() - started < 15  # not the 20 s timeout
        assert "cut off" in str(cut.value) or "not available" in str(cut.value), cut.value
        with pytest.raises(McpDown):
            await upstream.call("echo", {"text": "again"})
        assert upstream.state == "down" and upstream.why
    finally:
        await upstream.stop()
