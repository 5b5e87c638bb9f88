"""The setup phase's egress proxy (kennel/egress.py) on real sockets: an allowed local
"registry" is reached (absolute-form http and a CONNECT tunnel), another local port, a
host name not on the list and junk requests are refused before any socket is opened."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import suppress
from pathlib import Path

import pytest
from aiohttp import web

from kennel.egress import EgressProxy, Refusal, default_registries, parse_allow


async def _server(body: bytes, hits: list[str]) -> tuple[web.AppRunner, int]:
    async def handle(request: web.Request) -> web.Response:
        hits.append(request.path_qs)
        return web.Response(body=body)

    app = web.Application()
    app.router.add_get("/{tail:.*}", handle)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    return runner, port


@pytest.fixture
async def servers() -> AsyncIterator[tuple[int, int, list[str], list[str]]]:
    ok_hits: list[str] = []
    bad_hits: list[str] = []
    ok, ok_port = await _server(b"registry", ok_hits)
    bad, bad_port = await _server(b"secret", bad_hits)
    try:
        yield ok_port, bad_port, ok_hits, bad_hits
    finally:
        await ok.cleanup()
        await bad.cleanup()


async def _ask(sock: Path, request: bytes, then: bytes = b"") -> bytes:
    reader, writer = await asyncio.open_unix_connection(str(sock))
    writer.write(request)
    await writer.drain()
    if then:
        head = await reader.readuntil(b"\r\n\r\n")
        if b" 200 " not in head.split(b"\r\n")[0]:
            writer.close()
            return head + await reader.read()
        writer.write(then)
        await writer.drain()
    data = await asyncio.wait_for(reader.read(), 10)
    writer.close()
    return data


async def test_allowed_registry_is_reached_and_others_refused(
    tmp_path: Path, servers: tuple[int, int, list[str], list[str]]
) -> None:
    ok_port, bad_port, ok_hits, bad_hits = servers
    sock = tmp_path / "egress.sock"
    log = tmp_path / "egress.jsonl"
    async with EgressProxy(sock, parse_allow([f"127.0.0.1:{ok_port}"]), log_path=log) as proxy:
        got = await _ask(
            sock,
            f"GET http://127.0.0.1:{ok_port}/simple/?q=1 HTTP/1.1\r\nHost: x\r\n"
            "Proxy-Authorization: nope\r\n\r\n".encode(),
        )
        assert got.startswith(b"HTTP/1.1 200") and got.endswith(b"registry")
        # A tunnel (what pip and npm do for https), with plain HTTP inside it here.
        got = await _ask(
            sock,
            f"CONNECT 127.0.0.1:{ok_port} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode(),
            then=b"GET /pkg.tgz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
        )
        assert got.endswith(b"registry"), got[:200]
        # Another local port, a name not on the list, a tunnel to it: refused.
        for request in (
            f"GET http://127.0.0.1:{bad_port}/ HTTP/1.1\r\n\r\n",
            f"CONNECT 127.0.0.1:{bad_port} HTTP/1.1\r\n\r\n",
            f"GET http://localhost:{ok_port}/ HTTP/1.1\r\n\r\n",
            "CONNECT 127.0.0.1 HTTP/1.1\r\n\r\n",
        ):
            got = await _ask(sock, request.encode())
            assert got.startswith(b"HTTP/1.1 403"), (request, got)
        for junk in (b"GET / HTTP/1.1\r\n\r\n", b"hello\r\n\r\n", b"GET ftp://a/ HTTP/1.1\r\n\r\n"):
            assert (await _ask(sock, junk)).startswith(b"HTTP/1.1 400")
        assert proxy.stats.refused.get(f"127.0.0.1:{bad_port}") == 2
    assert ok_hits == ["/simple/?q=1", "/pkg.tgz"]
    assert bad_hits == []
    assert f'"target": "127.0.0.1:{bad_port}", "allowed": false' in log.read_text()
    assert not sock.exists()


async def test_a_stranger_uid_is_hung_up_on(tmp_path: Path) -> None:
    sock = tmp_path / "e.sock"
    proxy = EgressProxy(sock, parse_allow(["127.0.0.1:1"]))
    proxy.peer_uids = frozenset({123456})  # not this process's uid
    async with proxy:
        reader, writer = await asyncio.open_unix_connection(str(sock))
        writer.write(b"GET http://127.0.0.1:1/ HTTP/1.1\r\n\r\n")
        with suppress(ConnectionResetError):  # hung up before the request was read
            assert await asyncio.wait_for(reader.read(), 5) == b""
        writer.close()
    assert proxy.stats.allowed == {} and proxy.stats.refused == {}


def test_allowlist_entries() -> None:
    allow = parse_allow(["https://Mirror.example/simple/", "10.0.0.5:3128", "pkgs.example"])
    assert allow.permits("mirror.example", 443) and not allow.permits("mirror.example", 80)
    assert allow.permits("10.0.0.5", 3128) and not allow.permits("10.0.0.5", 443)
    assert allow.permits("PKGS.example.", 80) and allow.permits("pkgs.example", 443)
    assert not allow.permits("pkgs.example", 22)
    for bad in ("ftp://x/", "*", "a b", "host:99999", "0.0.0.0", "file:///opt/x"):
        with pytest.raises(Refusal):
            parse_allow([bad])


def test_default_registries_come_from_the_tools() -> None:
    """Asked of this host's pip and npm: http(s) URLs only (a file:// index is not a
    place a proxy can reach), and never empty where pip is installed."""
    found = default_registries()
    assert found and all(u.startswith(("http://", "https://")) for u in found)
    parse_allow(found)  # every default is a valid entry
