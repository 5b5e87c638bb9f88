"""The port between the adapter and neonize, and its real implementation.

``WhatsAppClient`` is all the adapter uses of WhatsApp. ``NeonizeClient`` implements it
over neonize's async client (``NewAClient``); tests implement it with a recording fake
that emits real neonize event protobufs from a thread, as neonize's Go side does.

Threads: neonize's Go code calls back on its own threads and schedules handlers with
``run_coroutine_threadsafe`` on the loop that first called ``connect()``. The event sink
given to ``set_event_sink`` must therefore be thread-safe (the adapter's only hands the
event to its loop with ``call_soon_threadsafe``).
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import os
from collections.abc import Callable
from contextlib import suppress
from pathlib import Path
from typing import Any, Protocol

from channels.whatsapp._neonize import (
    EVENT_TYPES,
    ChatPresence,
    ChatPresenceMedia,
    ClientFactory,
    DisconnectedEv,
    NewAClient,
    QREv,
    ReceiptType,
)
from core.errors import ChannelError

log = logging.getLogger(__name__)

EventSink = Callable[[Any], None]  # gets neonize event protobufs, from any thread


class WhatsAppClient(Protocol):
    def set_event_sink(self, sink: EventSink | None) -> None: ...

    async def paired(self) -> bool:
        """A device is stored: connecting needs no QR code."""

    async def connect(self) -> None: ...

    async def reconnect(self) -> None:
        """Drop the connection, whatever its state, and connect again."""

    async def disconnect(self) -> None: ...

    async def is_connected(self) -> bool: ...

    def own_users(self) -> frozenset[str]:
        """User parts (number, LID) of the linked account, once known."""

    async def send_message(self, to: Any, message: Any) -> str:
        """Send a waE2E ``Message``; returns the new message's id."""

    async def edit_message(self, chat: Any, message_id: str, message: Any) -> str: ...

    async def send_chat_presence(self, chat: Any, composing: bool) -> None: ...

    async def mark_read(self, message_id: str, chat: Any, sender: Any) -> None: ...

    async def download(self, message: Any) -> bytes: ...

    async def send_media(
        self, to: Any, data: bytes, kind: str, mime: str, name: str, caption: str
    ) -> str:
        """Upload ``data`` and send it as an image (``kind`` "image") or a document;
        returns the new message's id."""

    async def pair_phone(self, phone: str) -> str:
        """Ask WhatsApp for a pairing code for ``phone`` (needs a live, unpaired connection)."""


class NeonizeClient:
    """``WhatsAppClient`` over neonize's ``NewAClient``; the device store is ``db_path``."""

    def __init__(self, db_path: Path) -> None:
        self.db_path = db_path
        self._client = NewAClient(str(db_path))
        self._sink: EventSink | None = None
        self._task: asyncio.Task[Any] | None = None  # neonize's Go call; runs while connected
        self._stopping = False
        for event_type in EVENT_TYPES:
            self._client.event(event_type)(self._forward)
        # Replaces neonize's default, which prints the QR code to stdout itself.
        self._client.event.qr(self._on_qr)

    def set_event_sink(self, sink: EventSink | None) -> None:
        self._sink = sink

    async def _forward(self, _client: Any, event: Any) -> None:
        sink = self._sink
        if sink is not None:
            sink(event)

    async def _on_qr(self, _client: Any, data: bytes) -> None:
        sink = self._sink
        if sink is not None:
            sink(QREv(Codes=[data.decode()]))

    async def paired(self) -> bool:
        self.db_path.parent.mkdir(parents=True, exist_ok=True)
        try:
            devices = await asyncio.to_thread(
                ClientFactory.get_all_devices_from_db, str(self.db_path)
            )
        except ValueError as err:  # neonize could not parse Go's "error: ..." answer
            raise ChannelError(f"cannot read the WhatsApp device store {self.db_path}") from err
        finally:
            if self.db_path.exists():  # it holds the session keys
                os.chmod(self.db_path, 0o600)
        return bool(devices)

    async def connect(self) -> None:
        self._stopping = False
        self._task = await self._client.connect()
        self._task.add_done_callback(self._ended)

    def _ended(self, task: asyncio.Task[Any]) -> None:
        err = None if task.cancelled() else task.exception()
        if self._stopping:
            return
        # The Go call returned without being asked to: the connection is gone.
        log.warning("whatsapp: neonize connection ended%s", f": {err}" if err else "")
        if self._sink is not None:
            self._sink(DisconnectedEv(status=True))

    async def _stop(self) -> None:
        self._stopping = True
        task, self._task = self._task, None
        if task is None:
            return
        await self._client.stop()  # Go: disconnect, forget the client, end the call
        with suppress(Exception):  # its error, or TimeoutError: either way it is over
            async with asyncio.timeout(10):
                await task

    async def reconnect(self) -> None:
        await self._stop()
        await self.connect()

    async def disconnect(self) -> None:
        await self._stop()

    async def is_connected(self) -> bool:
        if self._task is None or self._task.done():
            return False  # asking Go about a client it never created would crash it
        # neonize's async ``is_connected`` property returns an awaitable, not a bool.
        state = self._client.is_connected
        if inspect.isawaitable(state):
            state = await state
        return bool(state)

    def own_users(self) -> frozenset[str]:
        me = self._client.me  # neonize stores the Device event here
        if me is None:
            return frozenset()
        return frozenset(u for u in (me.JID.User, me.LID.User) if u)

    async def send_message(self, to: Any, message: Any) -> str:
        response = await self._client.send_message(to, message)
        return str(response.ID)

    async def edit_message(self, chat: Any, message_id: str, message: Any) -> str:
        response = await self._client.edit_message(chat, message_id, message)
        return str(response.ID)

    async def send_chat_presence(self, chat: Any, composing: bool) -> None:
        state = (
            ChatPresence.CHAT_PRESENCE_COMPOSING if composing else ChatPresence.CHAT_PRESENCE_PAUSED
        )
        await self._client.send_chat_presence(
            chat, state, ChatPresenceMedia.CHAT_PRESENCE_MEDIA_TEXT
        )

    async def mark_read(self, message_id: str, chat: Any, sender: Any) -> None:
        await self._client.mark_read(message_id, chat=chat, sender=sender, receipt=ReceiptType.READ)

    async def download(self, message: Any) -> bytes:
        return bytes(await self._client.download_any(message))

    async def send_media(
        self, to: Any, data: bytes, kind: str, mime: str, name: str, caption: str
    ) -> str:
        # neonize uploads (encrypted, to WhatsApp's media servers) while building.
        if kind == "image":
            message = await self._client.build_image_message(data, caption=caption or None)
        else:
            message = await self._client.build_document_message(
                data, caption=caption or None, title=name, filename=name, mimetype=mime
            )
        return await self.send_message(to, message)

    async def pair_phone(self, phone: str) -> str:
        return str(await self._client.PairPhone(phone, show_push_notification=True))
