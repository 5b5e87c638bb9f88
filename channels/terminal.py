"""The terminal channel: type as you would on the phone, read what the phone would show.

It is also the end-to-end test driver: ``submit()`` injects a line and every reply is
kept in ``outbox`` as well as printed.
"""

from __future__ import annotations

import asyncio
import logging
import sys
import threading
import uuid
from contextlib import suppress
from typing import Any, TextIO

from channels.base import Capabilities, InboundSink
from core.events import Inbound, Outbound, SendResult
from core.tasks import Spawner, cancel_and_wait

log = logging.getLogger(__name__)
# What the reader posts for a line that is not UTF-8 (compared by identity).
UNDECODABLE = "\x00undecodable\n"
NOT_UTF8 = (
    "⚠️ I couldn't read that line: it is not UTF-8 (check your terminal's "
    "encoding). I ignored it; type it again."
)


class TerminalChannel:
    name = "terminal"
    capabilities = Capabilities(message_limit=4000, can_edit=False, markup="plain")

    def __init__(
        self,
        chat: str = "owner",
        *,
        out: TextIO | None = None,
        read_stdin: bool = False,
        on_eof: asyncio.Event | None = None,
        hold_input: bool = False,
    ) -> None:
        self.chat = chat
        self.outbox: asyncio.Queue[Outbound] = asyncio.Queue()
        self._out = out
        self._read_stdin = read_stdin
        self._on_eof = on_eof
        self._sink: InboundSink | None = None
        self._reader_task: asyncio.Task[Any] | None = None
        self._sent = 0
        # Lines typed (or piped) before Fetch is ready wait here until ``open_input()``:
        # the owner sees replies after the banner, and start-up never races a message.
        self._input_open = asyncio.Event()
        if not hold_input:
            self._input_open.set()

    async def start(self, sink: InboundSink, spawner: Spawner) -> None:
        if self._sink is not None:
            raise RuntimeError("terminal channel already started")
        self._sink = sink
        if self._read_stdin:
            self._reader_task = spawner.spawn(self._read_lines(), name="channel:terminal:stdin")

    def open_input(self) -> None:
        """Start handing typed lines to Fetch (they were read and kept until now)."""
        self._input_open.set()

    async def stop(self) -> None:
        task, self._reader_task = self._reader_task, None
        await cancel_and_wait(task)
        self._sink = None

    async def submit(self, text: str, *, message_id: str | None = None) -> Inbound:
        if self._sink is None:
            raise RuntimeError("terminal channel is not started")
        inbound = Inbound(
            channel=self.name,
            chat=self.chat,
            sender=self.chat,
            message_id=message_id or uuid.uuid4().hex,
            text=text,
            from_owner=True,
        )
        await self._sink(inbound)
        return inbound

    async def send(self, message: Outbound) -> SendResult:
        self._sent += 1
        await self.outbox.put(message)
        if self._out is not None:
            lines = message.text.splitlines() or [""]
            self._out.write("fetch> " + "\n       ".join(lines) + "\n")
            self._out.flush()
        return SendResult(message_id=f"out-{self._sent}")

    async def set_typing(self, chat: str, typing: bool) -> None:
        return None

    def health(self) -> str:
        return "terminal: attached"

    async def _read_lines(self) -> None:
        # A daemon thread reads stdin (ttys, pipes and files alike). It must be a daemon:
        # a read blocked on a terminal never returns, and a pool thread (to_thread) would
        # keep the process alive after Ctrl-C until the owner pressed Enter.
        loop = asyncio.get_running_loop()
        lines: asyncio.Queue[str | None] = asyncio.Queue()

        def post(item: str | None) -> None:
            if not loop.is_closed():
                with suppress(RuntimeError):  # the loop closed between check and call
                    loop.call_soon_threadsafe(lines.put_nowait, item)

        def reader() -> None:
            # Bytes, decoded here line by line: one line that is not UTF-8 (a paste from
            # another encoding) must cost that line, never the reader (a decode error in
            # a text stream would end this thread and leave Fetch deaf).
            for raw in iter(sys.stdin.buffer.readline, b""):
                try:
                    post(raw.decode("utf-8"))
                except UnicodeDecodeError:
                    post(UNDECODABLE)
            post(None)

        threading.Thread(target=reader, name="terminal-stdin", daemon=True).start()
        await self._input_open.wait()
        while (line := await lines.get()) is not None:
            if line is UNDECODABLE:
                await self.send(Outbound(self.name, self.chat, NOT_UTF8))
                continue
            text = line.rstrip("\n")
            if text.strip():
                try:
                    await self.submit(text)
                except Exception:  # the reader must outlive any one line's failure
                    log.exception("terminal: a typed line failed")
        if self._on_eof is not None:
            self._on_eof.set()
