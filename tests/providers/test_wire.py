"""The model path without the openai SDK (orchestrator/providers/wire.py): a model call
through the real chain to a real scripted server on 127.0.0.1 imports no SDK (in a
fresh interpreter, the only honest view of sys.modules), keeps the loop turning, sends
the JSON the SDK sent, and reads answers as the SDK's models did."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import aiohttp
import aiohttp.helpers
import pytest
from aiohttp import web

from orchestrator import completion
from orchestrator.config import ModelSettings
from orchestrator.providers.chain import ChainFailed, ProviderChain
from orchestrator.providers.settings import ProviderEntry
from orchestrator.providers.wire import Node, _content_type, encode
from tests.fakes.model_server import ScriptedModelServer, Text, ToolCall

ROOT = Path(__file__).resolve().parents[2]


def test_a_model_call_imports_no_sdk_and_never_stalls_the_loop(tmp_path: Path) -> None:
    script = textwrap.dedent(
        """
        import asyncio, json, sys, time
        from orchestrator.config import ModelSettings
        from orchestrator.providers.chain import ChainFailed, ProviderChain
        from orchestrator.providers.settings import ProviderEntry
        from tests.fakes.model_server import ScriptedModelServer, Text

        SDK = ("openai", "httpx", "httpx2")

        async def ticker(gaps):
            last = time.perf_counter()
            while True:
                await asyncio.sleep(0.005)
                now = time.perf_counter()
                gaps.append(now - last)
                last = now

        async def main():
            gaps = []
            async with ScriptedModelServer() as srv:
                srv.script(Text("hi from the model"))
                entry = ProviderEntry(name="one", base_url=srv.url + "/v1", api_keys=("sk-1",))
                chain = ProviderChain(ModelSettings(name="m", providers=(entry,)))
                tick = asyncio.create_task(ticker(gaps))
                await asyncio.sleep(0.02)
                try:
                    response, attempt = await chain.complete([{"role": "user", "content": "hé"}])
                finally:
                    tick.cancel()
                    await chain.close()
                request = srv.model_requests[0]
            print(json.dumps({
                "sdk": sorted(m for m in sys.modules if m.split(".")[0] in SDK),
                "text": response.choices[0].message.content,
                "status": attempt.status,
                "raw": request.raw.decode(),
                "max_gap": max(gaps),
            }))

        asyncio.run(main())
        """
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("FETCH_")}
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        env=env,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["sdk"] == []
    assert result["text"] == "hi from the model" and result["status"] == 200
    # Byte for byte what the SDK sent: compact JSON, UTF-8 (not \\u escapes), nothing added.
    assert result["raw"] == '{"model":"m","messages":[{"role":"user","content":"hé"}]}'
    assert result["max_gap"] < 0.25


async def test_the_key_and_the_tool_calls_round_trip() -> None:
    async with ScriptedModelServer() as srv:
        srv.require_key("sk-right")
        srv.script(ToolCall("read_file", {"path": "README.md"}, id="call_1"))
        entry = ProviderEntry(name="one", base_url=srv.url + "/v1/", api_keys=("sk-right",))
        chain = ProviderChain(ModelSettings(name="m", providers=(entry,)))
        tools = [{"type": "function", "function": {"name": "read_file", "parameters": {}}}]
        try:
            response, attempt = await chain.complete([{"role": "user", "content": "x"}], tools)
        finally:
            await chain.close()
    assert attempt.status == 200 and attempt.tokens_in >= 0
    call = response.choices[0].message.tool_calls[0]
    assert call.id == "call_1" and call.function.name == "read_file"
    assert json.loads(call.function.arguments) == {"path": "README.md"}
    dumped = call.model_dump(exclude_none=True)
    assert dumped["function"]["name"] == "read_file" and dumped["id"] == "call_1"
    sent = json.loads(srv.model_requests[0].raw)
    assert sent["tools"] == tools  # a trailing slash on base_url changes nothing


def test_an_answer_reads_like_the_sdks_models() -> None:
    answer = Node({"choices": [{"message": {"content": None, "tool_calls": None}}], "usage": None})
    message = answer.choices[0].message
    assert message.content is None and message.tool_calls is None
    assert answer.usage is None and answer.error is None  # absent: None, as the SDK's
    assert completion.problem(answer) is None
    lax = Node({"id": "c", "function": {"name": "f", "arguments": {"a": 1}}, "type": None})
    completion.normalise_arguments([lax])  # an object from a lax server becomes its string
    assert lax.function.arguments == '{"a": 1}'
    assert lax.model_dump(exclude_none=True) == {
        "id": "c",
        "function": {"name": "f", "arguments": '{"a": 1}'},
    }
    # An error object in a 200 stays the dict the SDK gave: its message is what is said.
    assert "answered an error: quota" in str(
        completion.problem(Node({"error": {"message": "quota"}}))
    )
    assert encode({"a": "é", "b": [1, 2]}) == '{"a":"é","b":[1,2]}'.encode()
    assert _content_type("application/json") == ("application/json", "utf-8")
    assert _content_type('Text/HTML; Charset="ISO-8859-1"') == ("text/html", "ISO-8859-1")


async def test_an_html_page_and_broken_json_are_told_apart() -> None:
    async def page(request: web.Request) -> web.Response:
        return web.Response(text="<html>login</html>", content_type="text/html")

    async def broken(request: web.Request) -> web.Response:
        return web.Response(text="{not json", content_type="application/json")

    app = web.Application()
    app.router.add_post("/page/chat/completions", page)
    app.router.add_post("/broken/chat/completions", broken)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    try:
        for path, said in (("page", "an HTML page"), ("broken", "not a completion")):
            entry = ProviderEntry(name=path, base_url=f"http://127.0.0.1:{port}/{path}")
            chain = ProviderChain(ModelSettings(name="m", providers=(entry,), max_retries=0))
            try:
                await chain.complete([{"role": "user", "content": "x"}])
            except ChainFailed as err:  # naming what the endpoint answered
                assert said in str(err), str(err)
            else:
                raise AssertionError(f"{path}: a non-completion was accepted")
            finally:
                await chain.close()
    finally:
        await runner.cleanup()


async def test_the_environments_proxy_is_used_read_once_per_endpoint(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """HTTP_PROXY (with its credentials) carries the model call, as it did the SDK's;
    NO_PROXY exempts the host. Read when the endpoint is made, not on every request
    (aiohttp's trust_env asked in two worker-thread trips per request)."""
    seen: list[tuple[str, str]] = []

    async def forward(request: web.Request) -> web.Response:
        seen.append((str(request.url), request.headers.get("Proxy-Authorization", "")))
        async with (
            aiohttp.ClientSession() as out,
            out.post(
                request.url,
                data=await request.read(),
                headers={"Authorization": request.headers["Authorization"]},
            ) as answer,
        ):
            return web.Response(
                body=await answer.read(), status=answer.status, content_type="application/json"
            )

    proxy = web.Application()
    proxy.router.add_route("*", "/{tail:.*}", forward)
    runner = web.AppRunner(proxy)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    for name in ("NO_PROXY", "no_proxy", "HTTPS_PROXY", "https_proxy", "http_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HTTP_PROXY", f"http://fetch:s3cret@127.0.0.1:{port}")
    calls = 0
    real = aiohttp.helpers.get_env_proxy_for_url

    def counted(url: Any) -> Any:
        nonlocal calls
        calls += 1
        return real(url)

    monkeypatch.setattr(aiohttp.helpers, "get_env_proxy_for_url", counted)
    try:
        async with ScriptedModelServer() as srv:
            srv.script(Text("one"), Text("two"), Text("three"))
            entry = ProviderEntry(name="one", base_url=srv.url + "/v1", api_keys=("sk-1",))
            chain = ProviderChain(ModelSettings(name="m", providers=(entry,)))
            try:
                for _ in range(2):
                    await chain.complete([{"role": "user", "content": "x"}])
            finally:
                await chain.close()
            assert len(seen) == 2 and seen[0][0] == srv.url + "/v1/chat/completions"
            assert seen[0][1] == "Basic " + base64.b64encode(b"fetch:s3cret").decode()
            assert calls == 1  # once, when the endpoint was made
            monkeypatch.setenv("NO_PROXY", "127.0.0.1")
            direct = ProviderChain(ModelSettings(name="m", providers=(entry,)))
            try:
                await direct.complete([{"role": "user", "content": "x"}])
            finally:
                await direct.close()
            assert len(seen) == 2 and len(srv.model_requests) == 3  # straight there
    finally:
        await runner.cleanup()


async def test_warm_opens_the_connection_the_first_message_then_reuses() -> None:
    """ProviderChain.warm (started by the app once it serves) opens the first endpoint's
    connection and sends nothing; the first completion goes over that same connection."""
    connections: list[int] = []
    requests: list[bytes] = []
    answer = json.dumps(
        {
            "id": "c1",
            "object": "chat.completion",
            "model": "m",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": "hi"},
                    "finish_reason": "stop",
                }
            ],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        }
    ).encode()

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        connections.append(len(connections))
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = next(
                    int(line.split(b":", 1)[1])
                    for line in head.split(b"\r\n")
                    if line.lower().startswith(b"content-length:")
                )
                requests.append(head.split(b"\r\n", 1)[0] + b" " + await reader.readexactly(length))
                writer.write(
                    b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                    + f"Content-Length: {len(answer)}\r\n\r\n".encode()
                    + answer
                )
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    entry = ProviderEntry(name="one", base_url=f"http://127.0.0.1:{port}/v1", api_keys=("k",))
    chain = ProviderChain(ModelSettings(name="m", providers=(entry,)))
    try:
        assert await chain.warm()
        for _ in range(50):
            if connections:
                break
            await asyncio.sleep(0.01)
        assert connections == [0] and requests == []  # connected, nothing sent
        response, _attempt = await chain.complete([{"role": "user", "content": "x"}])
        assert response.choices[0].message.content == "hi"
        assert connections == [0] and len(requests) == 1  # the same connection
    finally:
        await chain.close()
        server.close()
        await server.wait_closed()


async def test_warm_without_a_server_is_false_and_raises_nothing() -> None:
    entry = ProviderEntry(name="one", base_url="http://127.0.0.1:9/v1", api_keys=("k",))
    chain = ProviderChain(ModelSettings(name="m", providers=(entry,), max_attempts=1))
    try:
        assert await chain.warm() is False
    finally:
        await chain.close()
