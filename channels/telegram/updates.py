"""Telegram updates in, ``Inbound`` out, each update at most once.

Message ids are ``"{chat_id}:{message_id}"``: Telegram numbers messages per chat, so the
pair is stable across redeliveries (the gateway's persistent dedupe then drops a replay)
and it is the same id ``send`` returns, so ``reply_to`` and approvals line up. A button
press has no message of its own; it gets ``"cb:{callback_query.id}"``, answers yes/no as
a 👍/👎 reaction to the message the buttons are on, and carries the approval's nonce.
"""

from __future__ import annotations

import logging
import re
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from channels import media as accepted
from channels.telegram.format import CALLBACK_NO, CALLBACK_YES
from core.events import Attachment, Inbound

log = logging.getLogger(__name__)

CHANNEL = "telegram"
GROUP_TYPES = {"group", "supergroup"}
LONE_SURROGATE = re.compile("[\ud800-\udfff]")
ANSWERS = {CALLBACK_YES: ("yes", "👍"), CALLBACK_NO: ("no", "👎")}
# What the Bot API lets a bot download (getFile): bigger files cannot be fetched at all.
DOWNLOAD_LIMIT = 20 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class TgMedia:
    """A file a message carries, described: the channel downloads it after the gate."""

    kind: str  # image | audio | document
    file_id: str
    mime: str
    size: int
    label: str  # "voice note 0:07", "image", "document crash.log": how the text names it
    seconds: int = 0
    name: str = ""
    refused: str = ""  # why it is not fetched (type, size, length); "" to fetch


def _duration(seconds: int) -> str:
    return f"{seconds // 60}:{seconds % 60:02d}"


def _int(value: object) -> int:
    return int(value) if isinstance(value, int | float) else 0


def media_of(message: Mapping[str, Any], max_audio_seconds: int = 0) -> TgMedia | None:
    """The voice note, audio, photo or document of ``message`` (None: it has none)."""
    for field_, voice in (("voice", True), ("audio", False)):
        audio = message.get(field_)
        if isinstance(audio, dict) and isinstance(audio.get("file_id"), str):
            seconds = _int(audio.get("duration"))
            label = ("voice note" if voice else "audio") + (
                f" {_duration(seconds)}" if seconds else ""
            )
            mime = accepted.base_mime(str(audio.get("mime_type") or "audio/ogg"))
            size = _int(audio.get("file_size"))
            why = accepted.problem("audio", mime, size, DOWNLOAD_LIMIT) or ""
            if not why and 0 < max_audio_seconds < seconds:
                why = (
                    f"it is {_duration(seconds)} long; the limit is "
                    f"{_duration(max_audio_seconds)} (transcription.max_seconds)"
                )
            name = str(audio.get("file_name") or "")
            return TgMedia("audio", audio["file_id"], mime, size, label, seconds, name, why)
    photos = message.get("photo")
    if isinstance(photos, list) and photos:
        sizes = [p for p in photos if isinstance(p, dict) and isinstance(p.get("file_id"), str)]
        if sizes:  # Telegram sends each photo in several sizes: the largest is the photo
            best = max(sizes, key=lambda p: _int(p.get("width")) * _int(p.get("height")))
            size = _int(best.get("file_size"))
            why = accepted.problem("image", "image/jpeg", size, DOWNLOAD_LIMIT) or ""
            return TgMedia("image", best["file_id"], "image/jpeg", size, "image", refused=why)
    doc = message.get("document")
    if isinstance(doc, dict) and isinstance(doc.get("file_id"), str):
        name = str(doc.get("file_name") or "")
        mime = accepted.base_mime(str(doc.get("mime_type") or "application/octet-stream"))
        size = _int(doc.get("file_size"))
        kind = "image" if mime in accepted.ACCEPTED["image"] else "document"
        why = accepted.problem(kind, mime, size, DOWNLOAD_LIMIT) or ""
        label = f"document {name}" if name else "document"
        return TgMedia(kind, doc["file_id"], mime, size, label, name=name, refused=why)
    return None


def with_media(inbound: Inbound, found: TgMedia, path: str = "", why: str = "") -> Inbound:
    """``inbound`` with its file: kept at ``path``, or refused (audio: by the ears, in a
    line of their own; other files: said in the text, as WhatsApp does)."""
    why = why or found.refused
    if found.kind == "audio":
        att = Attachment(
            "audio",
            path if not why else "",
            found.mime,
            found.name,
            found.seconds,
            found.size,
            why,
        )
        return replace(inbound, attachments=(att,))
    if why:
        note = f"[{found.label} not received: {why}]"
        placeholder = inbound.text == f"[{found.label}]"
        return replace(inbound, text=note if placeholder else f"{inbound.text}\n{note}")
    att = Attachment(found.kind, path, found.mime, found.name, size=found.size)
    return replace(inbound, attachments=(att,))


def parse_button(data: object) -> tuple[str, str, str | None] | None:
    """``"fetch:yes:<nonce>"`` -> (text, reaction, nonce); None for foreign data."""
    if not isinstance(data, str):
        return None
    for prefix, (text, reaction) in ANSWERS.items():
        if data == prefix:
            return text, reaction, None
        if data.startswith(prefix + ":") and len(data) > len(prefix) + 1:
            return text, reaction, data[len(prefix) + 1 :]
    return None


def message_ref(chat_id: object, message_id: object) -> str:
    return f"{chat_id}:{message_id}"


def parse_ref(ref: str) -> tuple[str, int] | None:
    """``"chat:message"`` back into its parts; None for anything else."""
    chat, sep, mid = ref.rpartition(":")
    if not sep or not chat or not mid.isdigit():
        return None
    return chat, int(mid)


def _sender(user: Any, owner_id: str | None) -> tuple[str, bool] | None:
    if not isinstance(user, dict) or "id" not in user:
        return None
    sender = str(user["id"])
    return sender, owner_id is not None and sender == owner_id


def _from_message(message: Mapping[str, Any], owner_id: str | None) -> Inbound | None:
    chat = message.get("chat")
    who = _sender(message.get("from"), owner_id)
    text = message.get("text") or message.get("caption")
    if not isinstance(text, str) and (found := media_of(message)) is not None:
        text = f"[{found.label}]"  # the gateway answers an empty text with "empty message"
    if not isinstance(chat, dict) or who is None or not isinstance(text, str):
        return None  # stickers, joins, channel posts: nothing to answer
    # A lone surrogate ("\ud800" in the JSON) is no character and cannot be stored;
    # it becomes U+FFFD, as an undecodable byte would.
    text = LONE_SURROGATE.sub("\ufffd", text)
    reply = message.get("reply_to_message")
    reply_to = (
        message_ref(chat["id"], reply["message_id"])
        if isinstance(reply, dict) and "message_id" in reply
        else None
    )
    date = message.get("date")
    return Inbound(
        channel=CHANNEL,
        chat=str(chat["id"]),
        sender=who[0],
        message_id=message_ref(chat["id"], message["message_id"]),
        text=text,
        timestamp=float(date) if isinstance(date, int | float) else 0.0,
        is_group=chat.get("type") in GROUP_TYPES,
        from_owner=who[1],
        reply_to=reply_to,
    )


def _from_callback(query: Mapping[str, Any], owner_id: str | None, now: float) -> Inbound | None:
    message = query.get("message")
    who = _sender(query.get("from"), owner_id)
    answer = parse_button(query.get("data"))
    if not isinstance(message, dict) or who is None or answer is None:
        return None
    chat = message.get("chat")
    if not isinstance(chat, dict):
        return None
    return Inbound(
        channel=CHANNEL,
        chat=str(chat["id"]),
        sender=who[0],
        message_id=f"cb:{query['id']}",
        text=answer[0],
        timestamp=now,
        is_group=chat.get("type") in GROUP_TYPES,
        from_owner=who[1],
        # The buttons sit on the diff message itself: this is what approvals compare.
        reply_to=message_ref(chat["id"], message["message_id"]),
        reaction=answer[1],
        approval_nonce=answer[2],
    )


def to_inbound(update: Mapping[str, Any], owner_id: str | None, now: float) -> Inbound | None:
    """The ``Inbound`` for one update, or None when there is nothing a person said."""
    try:
        message = update.get("message")
        if isinstance(message, dict):
            return _from_message(message, owner_id)
        query = update.get("callback_query")
        if isinstance(query, dict):
            return _from_callback(query, owner_id, now)
    except (KeyError, TypeError, ValueError) as err:
        # A malformed update is logged and skipped: it must never stop the poller.
        log.warning("skipped malformed telegram update %s: %r", update.get("update_id"), err)
    return None


def _person(update: Mapping[str, Any]) -> Mapping[str, Any] | None:
    for kind in ("message", "callback_query"):
        part = update.get(kind)
        if isinstance(part, dict):
            return part
    return None


def from_owner(update: Mapping[str, Any], owner_id: str | None) -> bool:
    """Whether the owner sent this update: a guess from the raw update, used only to
    order a batch (the owner's first); the gate still decides."""
    part = _person(update)
    who = _sender(part.get("from"), owner_id) if part is not None else None
    return who is not None and who[1]


def gate_probe(update: Mapping[str, Any], owner_id: str | None, now: float) -> Inbound | None:
    """Who sent an update that carries nothing to hand over (a tap on a foreign button),
    as the gate's question: answering it is a trace of the sender too."""
    part = _person(update)
    if part is None:
        return None
    who = _sender(part.get("from"), owner_id)
    message = part.get("message", part)
    chat = message.get("chat") if isinstance(message, dict) else None
    if who is None or not isinstance(chat, dict) or "id" not in chat:
        return None
    return Inbound(
        channel=CHANNEL,
        chat=str(chat["id"]),
        sender=who[0],
        message_id=f"probe:{update.get('update_id')}",
        text="",
        timestamp=now,
        is_group=chat.get("type") in GROUP_TYPES,
        from_owner=who[1],
    )


class SeenUpdates:
    """A bounded window of update ids already handed over: Telegram redelivers a webhook
    update it got no 200 for, and a poll repeats what a crash left unconfirmed.

    Only the window lives here, in memory; the poll offset is deliberately not persisted.
    Telegram forgets updates once a poll confirms them, so a restart that polls from 0
    gets only what was never confirmed, and the gateway's persistent (channel, message id)
    dedupe drops any of those it already accepted. A stored offset would be worse than
    none: after a week without updates Telegram restarts ids at random, and polling from a
    stale, higher offset would skip real messages.
    """

    def __init__(self, window: int = 2048) -> None:
        self._seen: set[int] = set()
        self._order: deque[int] = deque()
        self._window = window

    def first_time(self, update_id: int) -> bool:
        if update_id in self._seen:
            return False
        self._seen.add(update_id)
        self._order.append(update_id)
        if len(self._order) > self._window:
            self._seen.discard(self._order.popleft())
        return True
