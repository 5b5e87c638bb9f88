"""One kennel floods its relay (slow headers, huge bodies, many connections at once) from
another process; Fetch's event loop, which runs every relay, keeps answering: the loop's
lag stays small and another kennel's relay answers promptly all along (issue 10.4)."""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Callable
from pathlib import Path

from kennel.relay import RelayLimits
from orchestrator.config import Settings
from tests.conftest import start_driver
from tests.fakes.relay_servers import SECRET, raw, relay_on, request, servers, status_of

FLOOD_SECONDS = 6.0
FLOODER = r"""
import socket, sys, threading, time
path, seconds, key = sys.argv[1], float(sys.argv[2]), sys.argv[3].encode()
end = time.monotonic() + seconds
def conn():
    s = socket.socket(socket.AF_UNIX); s.settimeout(5); s.connect(path); return s
def slowloris():
    while time.monotonic() < end:
        try:
            s = conn()
            for b in b"POST /v1/messages HTTP/1.1\r\nHost: relay\r\nX-Pad: " + b"a" * 4000:
                s.send(bytes([b])); time.sleep(0.2)
                if time.monotonic() > end: break
        except OSError:
            pass
def huge():
    body = b"x" * (48 * 1024 * 1024)
    head = b"POST /v1/messages?fake=slow HTTP/1.1\r\nHost: relay\r\nx-api-key: %s\r\n" % key
    head += b"Content-Length: %d\r\n\r\n" % len(body)
    while time.monotonic() < end:
        try:
            s = conn(); s.sendall(head + body); s.recv(100); s.close()
        except OSError:
            pass
def many():
    while time.monotonic() < end:
        try:
            s = conn()
            s.sendall(b"POST /v1/messages?fake=slow HTTP/1.1\r\nHost: relay\r\nx-api-key: "
                      + key + b"\r\nContent-Length: 2\r\n\r\n{}")
            s.recv(100); s.close()
        except OSError:
            pass
threads = [threading.Thread(target=f, daemon=True)
           for f in [slowloris] * 40 + [huge] * 6 + [many] * 60]
for t in threads: t.start()
for t in threads: t.join(seconds + 10)
"""


async def test_a_flooded_relay_does_not_stall_fetch(tmp_path: Path) -> None:
    limits = RelayLimits(header_timeout=2.0)
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    async with (
        servers() as (upstream, thief),
        relay_on(upstream, tmp_path / "a" / "r.sock", limits) as flooded,
        relay_on(upstream, tmp_path / "b" / "r.sock") as other,
    ):
        lags: list[float] = []
        answers: list[float] = []
        held: list[int] = []
        calls: list[int] = []  # the flooded relay's calls at the vendor
        stop = asyncio.Event()

        async def ticker() -> None:
            while not stop.is_set():
                t = time.monotonic()
                await asyncio.sleep(0.01)
                lags.append(time.monotonic() - t - 0.01)
                held.append(flooded._buffered)
                calls.append(limits.max_upstream - flooded._slots._value)

        async def neighbour() -> None:
            while not stop.is_set():
                t = time.monotonic()
                out = await raw(other.socket_path, request("POST", "/v1/messages"), timeout=10)
                assert status_of(out) == 200
                answers.append(time.monotonic() - t)
                await asyncio.sleep(0.1)

        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-c", FLOODER, str(flooded.socket_path), str(FLOOD_SECONDS), SECRET
        )
        tasks = [asyncio.create_task(ticker()), asyncio.create_task(neighbour())]
        try:
            await asyncio.wait_for(proc.wait(), FLOOD_SECONDS + 30)
        finally:
            if proc.returncode is None:
                proc.kill()
                await proc.wait()
            stop.set()
            await asyncio.gather(*tasks)
        after = await raw(flooded.socket_path, request("POST", "/v1/messages"))
    lags.sort()
    p99 = lags[int(len(lags) * 0.99)]
    print(
        f"loop lag p99 {p99 * 1000:.0f} ms, max {lags[-1] * 1000:.0f} ms; neighbour "
        f"max {max(answers) * 1000:.0f} ms over {len(answers)} calls; flooded relay: "
        f"{max(calls)} calls at the vendor at once, {max(held) // 2**20} MB held at most"
    )
    assert len(answers) >= 10
    assert max(answers) < 2.0, f"another kennel's relay waited {max(answers):.2f} s"
    assert p99 < 0.25 and lags[-1] < 1.5, f"event loop lag p99 {p99:.3f} s max {lags[-1]:.3f} s"
    assert max(calls) <= limits.max_upstream
    assert max(held) <= limits.max_buffered
    assert status_of(after) == 200 and thief.seen == []


async def test_the_owner_gets_status_while_a_relay_is_flooded(
    tmp_path: Path, make_settings: Callable[..., Settings]
) -> None:
    """The whole app on the loop the relay shares: /status through the gateway answers
    promptly while a kennel floods its relay."""
    app, driver = await start_driver(make_settings())
    took: list[float] = []
    try:
        await driver.ask("/status", "Fetch ·")  # warm
        async with (
            servers() as (upstream, _thief),
            relay_on(upstream, tmp_path / "r.sock", RelayLimits(header_timeout=2.0)) as relay,
        ):
            proc = await asyncio.create_subprocess_exec(
                sys.executable, "-c", FLOODER, str(relay.socket_path), str(FLOOD_SECONDS), SECRET
            )
            try:
                await asyncio.sleep(1.0)  # the flood is on
                while proc.returncode is None and len(took) < 8:
                    t = time.monotonic()
                    await driver.ask("/status", "Fetch ·", timeout=10)
                    took.append(time.monotonic() - t)
                    await asyncio.sleep(0.3)
            finally:
                if proc.returncode is None:
                    proc.kill()
                await proc.wait()
    finally:
        await app.__aexit__(None, None, None)
    print(f"/status during the flood: max {max(took) * 1000:.0f} ms over {len(took)}")
    assert len(took) >= 5 and max(took) < 1.0, took
