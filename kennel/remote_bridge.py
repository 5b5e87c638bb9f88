"""The relay's way into a kennel on another engine: the container's own stdio, attached.

No host folder can be bound there and no port is opened. The container's main process
is kennel/remote_mux.js: it listens on the loopback port the CLIs use and carries each
connection as frames over its stdout and stdin. This side holds one attach stream to it
(the engine's API, hijacked: stdin raw, stdout in the engine's 8-byte framing), and
connects each stream the kennel opens to the run's relay socket on this machine, as
Fetch's own uid, which the relay admits. Everything runs on a loop of its own, in one
thread per container, so a busy engine never holds up Fetch's loop.

Bounded: at most ``MAX_STREAMS`` open, frames of at most ``MAX_FRAME`` bytes, at most
``INBOX_FRAMES`` of a stream waiting for its relay connection; each frame is handled
before the next is read, so a kennel that floods, or reads nothing back, holds up its
own side, never Fetch's memory. Anything the framing does not allow ends the bridge,
which ends the container's main process, and the next task gets a fresh kennel.
"""

from __future__ import annotations

import asyncio
import logging
import struct
import threading
from contextlib import suppress
from pathlib import Path

from core.errors import KennelError
from kennel.remote_engine import API_VERSION, Engine

log = logging.getLogger(__name__)
MAX_STREAMS = 64
MAX_FRAME = 1 << 20
INBOX_FRAMES = 4  # per stream, waiting for the relay connection to take them
MUX_SCRIPT = (Path(__file__).parent / "remote_mux.js").read_text(encoding="utf-8")
HEAD = struct.Struct(">cII")


class BridgeBroken(Exception):
    """The kennel's side said something the framing does not allow."""


class _Stream:
    def __init__(self) -> None:
        # Bounded: a relay connection that reads slowly (or not at all) holds up the
        # kennel's stream, never Fetch's memory.
        self.inbox: asyncio.Queue[tuple[bytes, bytes]] = asyncio.Queue(INBOX_FRAMES)
        self.tasks: list[asyncio.Task[None]] = []


class Bridge:
    """One container's attach stream, and the relay connections on it."""

    def __init__(self, engine: Engine, container_id: str, relay_socket: Path) -> None:
        self._engine = engine
        self._container = container_id
        self._socket = relay_socket
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._run, daemon=True, name=f"kennel-bridge-{container_id[:8]}"
        )
        self._attached = threading.Event()
        self._ready = threading.Event()
        self._ended = threading.Event()
        self._problem = ""
        self._writer: asyncio.StreamWriter | None = None
        self._streams: dict[int, _Stream] = {}
        self._main: asyncio.Task[None] | None = None
        self.opened = 0  # streams the kennel opened, over the bridge's life

    # -- from Fetch's threads ------------------------------------------------------------
    def attach(self, timeout: float = 30) -> None:
        """Attach to the (created, not yet started) container's stdio."""
        self._thread.start()
        if not self._attached.wait(timeout) or self._ended.is_set():
            self.close()
            why = self._problem or "timeout"
            raise KennelError(f"could not attach to the remote kennel: {why}")

    def wait_ready(self, timeout: float = 20) -> None:
        """The kennel's forwarder listens (its first frame)."""
        if not self._ready.wait(timeout):
            self.close()
            raise KennelError(
                f"the remote kennel's forwarder did not start: {self._problem or 'timeout'}"
            )

    @property
    def alive(self) -> bool:
        return not self._ended.is_set()

    def close(self) -> None:
        if self._thread.is_alive() and not self._loop.is_closed():
            with suppress(RuntimeError):
                self._loop.call_soon_threadsafe(self._stop)
            self._thread.join(5)

    # -- its own loop --------------------------------------------------------------------
    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        try:
            self._main = self._loop.create_task(self._serve())
            self._loop.run_until_complete(self._main)
        except (asyncio.CancelledError, Exception) as err:  # logged, and told to attach()
            if not isinstance(err, asyncio.CancelledError):
                self._problem = self._problem or str(err)[:200]
        finally:
            self._ended.set()
            self._attached.set()
            with suppress(Exception):
                pending = [t for t in asyncio.all_tasks(self._loop) if not t.done()]
                for task in pending:
                    task.cancel()
                if pending:
                    self._loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
            self._loop.close()
            if self._problem:
                log.warning("remote kennel bridge ended: %s", self._problem)

    def _stop(self) -> None:
        if self._main is not None:
            self._main.cancel()

    async def _serve(self) -> None:
        reader, writer, close = await self._engine.connect()
        try:
            await self._upgrade(reader, writer)
            self._writer = writer
            self._attached.set()
            await self._read(reader)
        except (OSError, asyncio.IncompleteReadError, BridgeBroken) as err:
            self._problem = str(err)[:200] or type(err).__name__
        finally:
            for stream in list(self._streams.values()):
                for task in stream.tasks:
                    task.cancel()
            await close()

    async def _upgrade(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        request = (
            f"POST /v{API_VERSION}/containers/{self._container}/attach"
            "?stream=1&stdin=1&stdout=1&stderr=1 HTTP/1.1\r\n"
            "Host: docker\r\nContent-Type: text/plain\r\n"
            "Connection: Upgrade\r\nUpgrade: tcp\r\n\r\n"
        )
        writer.write(request.encode())
        await writer.drain()
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 30)
        status = head.split(b"\r\n", 1)[0]
        if b" 101 " not in status + b" " and b" 200 " not in status + b" ":
            raise BridgeBroken(f"the engine refused to attach: {status.decode(errors='replace')}")

    async def _read(self, reader: asyncio.StreamReader) -> None:
        # A bytearray, consumed from the front: a chunk of many small frames costs its
        # size, never a copy of the rest of it per frame.
        pending = bytearray()
        while True:
            header = await reader.readexactly(8)  # the engine's: stream, 0, 0, 0, size
            size = int.from_bytes(header[4:], "big")
            if size > 4 * MAX_FRAME:
                raise BridgeBroken("an oversized chunk from the engine")
            chunk = await reader.readexactly(size)
            if header[0] == 2:
                # The kennel's bytes, quoted: a line break in them forges no log line.
                log.info("remote kennel forwarder: %r", chunk[:300].decode(errors="replace"))
                continue
            pending += chunk
            while len(pending) >= HEAD.size:
                kind, sid, length = HEAD.unpack_from(pending)
                if length > MAX_FRAME:
                    raise BridgeBroken("an oversized frame from the kennel")
                if len(pending) < HEAD.size + length:
                    break
                body = bytes(pending[HEAD.size : HEAD.size + length])
                del pending[: HEAD.size + length]
                await self._frame(kind, sid, body)

    async def _frame(self, kind: bytes, sid: int, body: bytes) -> None:
        """One frame from the kennel. Awaited before the next is read: what waits for
        the relay, or for the kennel to read our answers, holds up the kennel's side
        (the engine stops taking its output), never piles up here."""
        if kind == b"R":
            self._ready.set()
            return
        if kind == b"O":
            if sid in self._streams or len(self._streams) >= MAX_STREAMS:
                self._send(b"C", sid)
                await self._drain()
                return
            self.opened += 1
            stream = _Stream()
            self._streams[sid] = stream
            stream.tasks.append(asyncio.create_task(self._carry(sid, stream)))
            return
        stream_ = self._streams.get(sid)
        if stream_ is None:
            return  # a stream already over: its last frames cross ours
        if kind not in (b"D", b"H", b"C"):
            raise BridgeBroken(f"an unknown frame {kind!r} from the kennel")
        await stream_.inbox.put((kind, body))

    def _send(self, kind: bytes, sid: int, body: bytes = b"") -> None:
        if self._writer is not None and not self._writer.is_closing():
            self._writer.write(HEAD.pack(kind, sid, len(body)) + body)

    async def _drain(self) -> None:
        """Wait while the kennel has not taken what was sent (its stdin's pipe full)."""
        if self._writer is not None and not self._writer.is_closing():
            await self._writer.drain()

    async def _carry(self, sid: int, stream: _Stream) -> None:
        """One connection: the kennel's frames to the relay, the relay's bytes back."""
        try:
            reader, writer = await asyncio.open_unix_connection(str(self._socket))
        except OSError as err:
            log.info("remote kennel: relay not reachable (%s)", err)
            self._streams.pop(sid, None)
            self._send(b"C", sid)
            await self._drain()
            return
        back = asyncio.create_task(self._back(sid, reader))
        stream.tasks.append(back)
        try:
            while True:
                kind, body = await stream.inbox.get()
                if kind == b"D":
                    writer.write(body)
                    await writer.drain()
                elif kind == b"H":
                    if writer.can_write_eof():
                        writer.write_eof()
                else:
                    break
            back.cancel()
        except OSError:
            self._send(b"C", sid)
        finally:
            self._streams.pop(sid, None)
            # Never waits on a relay connection that takes nothing more.
            writer.transport.abort()

    async def _back(self, sid: int, reader: asyncio.StreamReader) -> None:
        try:
            while chunk := await reader.read(MAX_FRAME):
                self._send(b"D", sid, chunk)
                await self._drain()
            self._send(b"H", sid)
        except OSError:
            self._send(b"C", sid)


__all__ = ["MUX_SCRIPT", "Bridge"]
