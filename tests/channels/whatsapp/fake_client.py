"""``FakeWhatsAppClient``: the ``WhatsAppClient`` port with WhatsApp replaced by a recording.

Events reach the adapter the way neonize delivers them: serialised to the wire bytes,
parsed back with ``FromString`` and handed to the event sink from another thread.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any

from neonize.proto.waE2E.WAWebProtobufsE2E_pb2 import DocumentMessage, ImageMessage

from channels.whatsapp import _neonize as nz
from channels.whatsapp.client import EventSink
from channels.whatsapp.jids import jid_str


@dataclass
class Call:
    name: str
    chat: str = ""
    text: str = ""
    message_id: str = ""
    extra: dict[str, Any] = field(default_factory=dict)
    at: float = field(default_factory=time.monotonic)


def text_of(message: Any) -> str:
    if message.conversation:
        return str(message.conversation)
    return str(message.extendedTextMessage.text)


class FakeWhatsAppClient:
    def __init__(
        self,
        *,
        paired: bool = True,
        fail_reconnects: int = 0,
        media: bytes | Exception = b"\x89PNG fake image",
        fail_sends: int = 0,
    ) -> None:
        self.sink: EventSink | None = None
        self.calls: list[Call] = []
        self.connected = False
        self._paired = paired
        self.fail_reconnects = fail_reconnects
        self.fail_sends = fail_sends
        self.fail_edits = False
        self.media = media
        self.own: frozenset[str] = frozenset()
        self._next_id = 0
        self.threads: set[str] = set()  # names of threads events were delivered from

    # -- driving the fake ----------------------------------------------------------------

    def emit(self, event: Any) -> None:
        """Deliver ``event`` like neonize: wire bytes, parsed on a foreign thread."""
        data, kind = event.SerializeToString(), type(event)

        def deliver() -> None:
            self.threads.add(threading.current_thread().name)
            if self.sink is not None:
                self.sink(kind.FromString(data))

        thread = threading.Thread(target=deliver, name="fake-neonize-go")
        thread.start()
        thread.join()

    def named(self, name: str) -> list[Call]:
        return [c for c in self.calls if c.name == name]

    @property
    def sent_texts(self) -> list[str]:
        return [c.text for c in self.calls if c.name in ("send", "edit")]

    # -- the port ------------------------------------------------------------------------

    def set_event_sink(self, sink: EventSink | None) -> None:
        self.sink = sink

    async def paired(self) -> bool:
        return self._paired

    async def connect(self) -> None:
        self.calls.append(Call("connect"))
        self.connected = True
        self.emit(nz.ConnectedEv(status=True))

    async def reconnect(self) -> None:
        self.calls.append(Call("reconnect"))
        if self.fail_reconnects > 0:
            self.fail_reconnects -= 1
            raise ConnectionError("dial tcp: network is unreachable")
        self.connected = True
        self.emit(nz.ConnectedEv(status=True))

    async def disconnect(self) -> None:
        self.calls.append(Call("disconnect"))
        self.connected = False

    async def is_connected(self) -> bool:
        return self.connected

    def own_users(self) -> frozenset[str]:
        return self.own

    def _new_id(self) -> str:
        self._next_id += 1
        return f"3EB0FE7C{self._next_id:04d}"

    async def send_message(self, to: Any, message: Any) -> str:
        if self.fail_sends > 0:
            self.fail_sends -= 1
            raise RuntimeError("websocket not connected")
        message_id = self._new_id()
        quoted = ""
        if message.HasField("extendedTextMessage"):
            quoted = str(message.extendedTextMessage.contextInfo.stanzaID)
        self.calls.append(
            Call(
                "send",
                jid_str(to),
                text_of(message),
                message_id,
                {"quoted": quoted, "message": message},
            )
        )
        return message_id

    async def edit_message(self, chat: Any, message_id: str, message: Any) -> str:
        if self.fail_edits:
            raise RuntimeError("message too old to edit")
        edit_id = self._new_id()
        self.calls.append(
            Call("edit", jid_str(chat), text_of(message), message_id, {"edit_id": edit_id})
        )
        return edit_id

    async def send_chat_presence(self, chat: Any, composing: bool) -> None:
        self.calls.append(Call("typing", jid_str(chat), extra={"composing": composing}))

    async def mark_read(self, message_id: str, chat: Any, sender: Any) -> None:
        self.calls.append(
            Call("read", jid_str(chat), message_id=message_id, extra={"sender": jid_str(sender)})
        )

    async def download(self, message: Any) -> bytes:
        self.calls.append(Call("download"))
        if isinstance(self.media, Exception):
            raise self.media
        return self.media

    async def send_media(
        self, to: Any, data: bytes, kind: str, mime: str, name: str, caption: str
    ) -> str:
        """As neonize builds it after the upload: a real image or document message."""
        message_id = self._new_id()
        if kind == "image":
            message = nz.Message(
                imageMessage=ImageMessage(
                    mimetype=mime, caption=caption, fileLength=len(data), directPath="/v/up"
                )
            )
        else:
            message = nz.Message(
                documentMessage=DocumentMessage(
                    mimetype=mime,
                    caption=caption,
                    title=name,
                    fileName=name,
                    fileLength=len(data),
                    directPath="/v/up",
                )
            )
        self.calls.append(
            Call(
                "send_media",
                jid_str(to),
                caption,
                message_id,
                {"kind": kind, "name": name, "data": data, "message": message},
            )
        )
        return message_id

    async def pair_phone(self, phone: str) -> str:
        self.calls.append(Call("pair_phone", extra={"phone": phone}))
        return "ABCD-EFGH"
