"""The relay's bridge (kennel/remote_bridge.py) against a hostile engine: the other
Docker engine (or whatever answers at its address) chooses the chunks of the attach
stream. Real unix sockets: a stand-in engine of the test's own answers the attach and
sends what it likes; a stand-in relay on the run's socket counts connections.

A chunk of up to 4 MB (what the bridge accepts from an engine) packed with the smallest
frames must be read in time linear in its size: parsed by slicing the rest of the buffer
after each frame, one such chunk cost about a terabyte of copying, a bridge thread
burning a core that no /stop could end (``close`` waits 5 s, then gives up on it)."""

from __future__ import annotations

import asyncio
import logging
import struct
import time
from pathlib import Path

import pytest

from kennel.remote_bridge import HEAD, MAX_FRAME, Bridge
from kennel.remote_engine import Engine


async def test_a_chunk_packed_with_tiny_frames_is_read_in_linear_time(tmp_path: Path) -> None:
    engine_sock, relay_sock = tmp_path / "engine.sock", tmp_path / "relay.sock"
    opened = asyncio.Event()
    loop = asyncio.get_running_loop()

    async def relay(_r: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        loop.call_soon_threadsafe(opened.set)
        writer.close()

    async def engine(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 101 UPGRADED\r\nConnection: Upgrade\r\nUpgrade: tcp\r\n\r\n")
        ready = HEAD.pack(b"R", 0, 0)
        writer.write(struct.pack(">BxxxI", 1, len(ready)) + ready)
        size = 4 * MAX_FRAME
        chunk = HEAD.pack(b"R", 0, 0) * (size // HEAD.size - 1) + HEAD.pack(b"O", 7, 0)
        writer.write(struct.pack(">BxxxI", 1, len(chunk)) + chunk)
        await writer.drain()
        try:
            await reader.read()  # held open until the bridge goes
        finally:
            writer.close()
            served.set()

    served = asyncio.Event()
    servers = [
        await asyncio.start_unix_server(engine, path=str(engine_sock)),
        await asyncio.start_unix_server(relay, path=str(relay_sock)),
    ]
    bridge = Bridge(Engine(f"unix://{engine_sock}"), "0" * 64, relay_sock)
    try:
        await asyncio.to_thread(bridge.attach, 10)
        await asyncio.to_thread(bridge.wait_ready, 10)
        started = time.monotonic()
        await asyncio.wait_for(opened.wait(), 30)  # the frame after the chunk's 466k
        took = time.monotonic() - started
    finally:
        await asyncio.to_thread(bridge.close)
        # The stand-in engine's side ends once the bridge's socket is gone: waited for, so
        # no transport is left for the loop's close to find.
        await asyncio.wait_for(served.wait(), 10)
        for server in servers:
            server.close()
    assert took < 30


async def test_the_kennels_stderr_forges_no_log_line(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The forwarder's stderr (the container's main process: the kennel can write to it)
    is logged quoted: its line breaks do not start lines of Fetch's log."""
    engine_sock = tmp_path / "engine.sock"
    forged = b"oops\n2026-11-27 02:00:00,000 WARNING orchestrator.task.runner: task 1 approved"

    async def engine(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 101 UPGRADED\r\nConnection: Upgrade\r\nUpgrade: tcp\r\n\r\n")
        writer.write(struct.pack(">BxxxI", 2, len(forged)) + forged)
        ready = HEAD.pack(b"R", 0, 0)
        writer.write(struct.pack(">BxxxI", 1, len(ready)) + ready)
        await writer.drain()
        try:
            await reader.read()
        finally:
            writer.close()
            served.set()

    served = asyncio.Event()
    server = await asyncio.start_unix_server(engine, path=str(engine_sock))
    bridge = Bridge(Engine(f"unix://{engine_sock}"), "0" * 64, tmp_path / "relay.sock")
    caplog.set_level(logging.INFO, logger="kennel.remote_bridge")
    try:
        await asyncio.to_thread(bridge.attach, 10)
        await asyncio.to_thread(bridge.wait_ready, 10)
    finally:
        await asyncio.to_thread(bridge.close)
        await asyncio.wait_for(served.wait(), 10)
        server.close()
    said = [r.getMessage() for r in caplog.records if "forwarder" in r.getMessage()]
    assert said, caplog.records
    assert not any("\n" in line for line in said), said
