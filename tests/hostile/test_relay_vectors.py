"""A hostile CLI against the model relay (issue 10.4): real servers on 127.0.0.1, the real
relay on a unix socket, raw bytes on the wire. Every vector asserts the key reached no
host but the configured upstream and never came back to the kennel."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import aiohttp
import pytest

from kennel.relay import ModelRelay, RelayLimits
from tests.fakes.relay_servers import KEY, SECRET, raw, relay_on, request, servers, status_of

SLOW = "/v1/messages?fake=slow"

TRICKS = [
    "http://{thief}/steal",
    "https://{thief}/steal",
    "//{thief}/steal",
    "@{thief}/steal",
    "{thief}/steal",
    "/..%2f..%2fsteal",
    "/%2e%2e/steal",
    "/%252e%252e/%252e%252e/steal",
    "/v1/..;/steal",
    "/v1\\..\\steal",
    "/v1/messages#@{thief}",
    "*",
]


@pytest.mark.parametrize("code", [301, 302, 303, 307, 308])
async def test_a_redirect_is_refused_never_followed(code: int, tmp_path: Path) -> None:
    async with servers() as (upstream, thief), relay_on(upstream, tmp_path / "r.sock") as relay:
        out = await raw(relay.socket_path, request("POST", f"/v1/messages?fake=redirect-{code}"))
    assert status_of(out) == 502 and b"follows no redirects" in out
    assert thief.seen == [] and KEY.encode() not in out
    # the key went there and only there
    assert upstream.keys_seen() == [f"/v1/messages?fake=redirect-{code}"]


@pytest.mark.parametrize("trick", TRICKS)
async def test_the_target_cannot_name_another_host(trick: str, tmp_path: Path) -> None:
    async with servers() as (upstream, thief), relay_on(upstream, tmp_path / "r.sock") as relay:
        target = trick.format(thief=thief.url.removeprefix("http://"))
        out = await raw(relay.socket_path, request("GET", target))
    assert 400 <= status_of(out) < 500, out[:200]
    assert thief.seen == [] and upstream.seen == [] and KEY.encode() not in out


@pytest.mark.parametrize(
    "header", ["Host", "X-Forwarded-Host", "Forwarded", "X-Original-URL", "X-Rewrite-URL", "X-Host"]
)
async def test_routing_headers_choose_nothing(header: str, tmp_path: Path) -> None:
    async with servers() as (upstream, thief), relay_on(upstream, tmp_path / "r.sock") as relay:
        host = thief.url.removeprefix("http://")
        value = f"host={host}" if header == "Forwarded" else host
        data = request("POST", "/v1/messages", headers={} if header == "Host" else {header: value})
        if header == "Host":  # the only Host the relay sees
            data = data.replace(b"Host: relay", f"Host: {host}".encode())
        out = await raw(relay.socket_path, data)
    assert status_of(out) == 200
    assert thief.seen == [] and upstream.keys_seen() == ["/v1/messages"]
    ((_m, _p, seen),) = upstream.seen
    assert all(host not in v for v in seen.values())  # not even passed on as a hint
    assert KEY.encode() not in out


async def test_an_upstream_with_userinfo_or_another_scheme_is_refused(tmp_path: Path) -> None:
    for bad in (
        "http://user:pw@127.0.0.1:9",
        "file:///etc/passwd",
        "127.0.0.1:9",
        "http://127.0.0.1:9/?to=x",
    ):
        with pytest.raises(ValueError, match="upstream must be"):
            ModelRelay(
                socket_path=tmp_path / "r.sock",
                upstream=bad,
                provider="anthropic",
                api_key=KEY,
                secret=SECRET,
                harness="h",
                task_id=1,
                log_path=tmp_path / "l",
            )


async def test_slow_headers_are_cut_off(tmp_path: Path) -> None:
    limits = RelayLimits(header_timeout=1.0)
    async with (
        servers() as (upstream, _thief),
        relay_on(upstream, tmp_path / "r.sock", limits) as relay,
    ):
        reader, writer = await asyncio.open_unix_connection(str(relay.socket_path))
        started = time.monotonic()
        cut = None
        for byte in request("POST", "/v1/messages")[:-30]:
            try:
                writer.write(bytes([byte]))
                await writer.drain()
                await asyncio.sleep(0.1)
            except ConnectionError:
                cut = time.monotonic() - started
                break
            if reader.at_eof() or (reader._buffer or writer.is_closing()):  # type: ignore[attr-defined]
                break
        if cut is None:
            async with asyncio.timeout(5):
                await reader.read()  # the relay closes: EOF
            cut = time.monotonic() - started
        writer.close()
        # A well-behaved request right after is answered at once.
        out = await raw(relay.socket_path, request("POST", "/v1/messages"))
    assert cut < 3.0, f"a byte-by-byte client held a connection {cut:.1f} s"
    assert status_of(out) == 200 and upstream.keys_seen() == ["/v1/messages"]


async def test_a_slow_body_is_cut_off(tmp_path: Path) -> None:
    limits = RelayLimits(body_timeout=1.0)
    async with (
        servers() as (upstream, _thief),
        relay_on(upstream, tmp_path / "r.sock", limits) as relay,
    ):
        reader, writer = await asyncio.open_unix_connection(str(relay.socket_path))
        data = request("POST", "/v1/messages", body=b"x" * 1000)
        writer.write(data[:-900])
        await writer.drain()
        started = time.monotonic()
        async with asyncio.timeout(5):
            out = await reader.read()
        writer.close()
    assert status_of(out) == 408 and time.monotonic() - started < 3.0
    assert upstream.seen == []


async def test_an_oversize_body_is_413_before_the_upstream(tmp_path: Path) -> None:
    limits = RelayLimits(max_body=1024 * 1024)
    async with (
        servers() as (upstream, _thief),
        relay_on(upstream, tmp_path / "r.sock", limits) as relay,
    ):
        declared = await raw(
            relay.socket_path, request("POST", "/v1/messages", body=b"x" * (2 * 1024 * 1024))
        )
        # Chunked: no length said up front, the relay counts as it reads.
        chunk = b"x" * 65536
        body = b"".join(b"%x\r\n%s\r\n" % (len(chunk), chunk) for _ in range(40)) + b"0\r\n\r\n"
        head = (
            b"POST /v1/messages HTTP/1.1\r\nHost: relay\r\nConnection: close\r\n"
            b"Transfer-Encoding: chunked\r\nx-api-key: " + SECRET.encode() + b"\r\n\r\n"
        )
        chunked = await raw(relay.socket_path, head + body)
        assert relay._buffered == 0  # nothing held after the refusals
    assert status_of(declared) == 413 and status_of(chunked) == 413
    assert upstream.seen == []


async def test_bytes_in_flight_are_capped(tmp_path: Path) -> None:
    """Bodies held at once (waiting for the vendor) stop at max_buffered: 503, not RAM."""
    limits = RelayLimits(max_body=600_000, max_buffered=1_000_000, max_upstream=1)
    async with (
        servers() as (upstream, _thief),
        relay_on(upstream, tmp_path / "r.sock", limits) as relay,
    ):
        outs = await asyncio.gather(
            *(
                raw(
                    relay.socket_path,
                    request("POST", SLOW, body=b'{"y":"' + b"y" * 500_000 + b'"}'),
                )
                for _ in range(6)
            )
        )
        assert relay._buffered == 0
    codes = sorted(status_of(o) for o in outs)
    assert 503 in codes and 200 in codes, codes
    assert upstream.peak == 1


async def test_many_at_once_are_bounded(tmp_path: Path) -> None:
    limits = RelayLimits(max_connections=16, max_upstream=3)
    async with (
        servers() as (upstream, thief),
        relay_on(upstream, tmp_path / "r.sock", limits) as relay,
    ):
        outs = await asyncio.gather(
            *(raw(relay.socket_path, request("POST", SLOW), timeout=30) for _ in range(80)),
            return_exceptions=True,
        )
        codes = [status_of(o) if isinstance(o, bytes) else 0 for o in outs]
        after = await raw(relay.socket_path, request("POST", "/v1/messages"))
    assert upstream.peak <= 3, upstream.peak  # the vendor never saw more than max_upstream
    assert codes.count(200) >= 3 and set(codes) <= {200, 503, 0}, codes
    assert codes.count(503) >= 80 - 16 - 16, codes  # over the cap: told busy, not queued
    assert status_of(after) == 200 and thief.seen == []


async def test_an_upstream_drop_mid_stream_cuts_the_answer(tmp_path: Path) -> None:
    async with servers() as (upstream, _thief), relay_on(upstream, tmp_path / "r.sock") as relay:
        out = await raw(relay.socket_path, request("POST", "/v1/messages?fake=drop"))
        conn = aiohttp.UnixConnector(path=str(relay.socket_path))
        async with (
            aiohttp.ClientSession(connector=conn) as client,
            client.post(
                "http://relay/v1/messages?fake=drop",
                json={"model": "m"},
                headers={"x-api-key": SECRET},
            ) as resp,
        ):
            assert resp.status == 200
            with pytest.raises(aiohttp.ClientPayloadError):
                await resp.read()
        # The relay is fine afterwards.
        again = await raw(relay.socket_path, request("POST", "/v1/messages"))
    assert out.count(b"HTTP/1.1 ") == 1 and status_of(out) == 200  # one response, no second
    assert b"message_start" in out and not out.endswith(b"0\r\n\r\n")  # not a tidy end
    assert b"relay_error" not in out and status_of(again) == 200
    entry = json.loads((tmp_path / "relay.jsonl").read_text().splitlines()[0])
    assert entry["path"] == "/v1/messages" and "stream cut" in entry["error"]
