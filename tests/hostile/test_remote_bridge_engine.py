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
import struct
import time
from pathlib import Path

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
        await reader.read()  # held open until the bridge goes

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
        for server in servers:
            server.close()
    assert took < 30
