"""The one HTTP listener: loopback by default, routes fixed before start, clear errors."""

from __future__ import annotations

import asyncio
import socket

import aiohttp
import pytest
from aiohttp import web

from channels.http import HttpServer
from channels.http_settings import HttpSettings
from core.errors import ConfigError


async def hello(request: web.Request) -> web.Response:
    return web.json_response({"hello": request.path})


async def test_serves_registered_routes_on_loopback() -> None:
    http = HttpServer(HttpSettings(port=0))
    http.add_route("GET", "/hello", hello)
    async with http, aiohttp.ClientSession() as s:
        assert http.url.startswith("http://127.0.0.1:")
        async with s.get(http.url + "/hello") as r:
            assert r.status == 200 and (await r.json()) == {"hello": "/hello"}
        async with s.get(http.url + "/nope") as r:
            assert r.status == 404
        async with s.post(http.url + "/hello") as r:
            assert r.status == 405


async def test_routes_are_fixed_at_start_and_unique() -> None:
    http = HttpServer(HttpSettings(port=0))
    http.add_route("GET", "/a", hello)
    with pytest.raises(ValueError, match="twice"):
        http.add_route("get", "/a", hello)
    async with http:
        with pytest.raises(RuntimeError, match="after the HTTP server started"):
            http.add_route("GET", "/b", hello)
        with pytest.raises(RuntimeError, match="already started"):
            await http.start()
    with pytest.raises(RuntimeError, match="cannot be restarted"):
        await http.start()


async def test_a_busy_port_is_a_config_error() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        http = HttpServer(HttpSettings(port=port))
        with pytest.raises(ConfigError, match=f"127.0.0.1:{port}"):
            await http.start()
    with pytest.raises(RuntimeError, match="not started"):
        _ = http.port


async def test_shutdown_hooks_run_before_in_flight_requests_are_awaited() -> None:
    http = HttpServer(HttpSettings(port=0), shutdown_timeout=10)
    release = asyncio.Event()

    async def slow(request: web.Request) -> web.Response:
        await release.wait()
        return web.json_response({})

    async def hook() -> None:
        release.set()

    http.add_route("GET", "/slow", slow)
    http.on_shutdown(hook)
    await http.start()
    async with aiohttp.ClientSession() as s:
        pending = asyncio.create_task(s.get(http.url + "/slow"))
        await asyncio.sleep(0.1)
        loop = asyncio.get_running_loop()
        started = loop.time()
        await http.stop()
        assert loop.time() - started < 5  # not the 10 s shutdown timeout
        (await pending).release()
