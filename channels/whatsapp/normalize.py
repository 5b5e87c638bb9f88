"""neonize ``MessageEv`` -> Fetch ``Inbound``: a pure function, golden-tested.

Nothing here does I/O. Media is only described (``MediaRef``); the adapter downloads it
and adds the ``Attachment``. Media that is refused up front (type, declared size) is said
in the text, e.g. ``"[image not received: 20.0 MB is over the 16.0 MB limit]"``, so the
owner gets an answer about it instead of silence. Media without a caption gets a
placeholder text (``"[image]"``, ``"[voice note 0:07]"``) because the gateway answers an
empty text with "I got an empty message".

Events that are not a person talking to Fetch come back as ``Skipped(reason)``: status
updates, newsletters, edits and deletions (the original was handled already; re-running an
edited command would surprise), removed reactions, stickers, locations, polls.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from channels.whatsapp import media
from channels.whatsapp.jids import (
    GROUP_SERVER,
    IGNORED_SERVERS,
    bare_user,
    jid_str,
    sender_number,
)
from core.events import Attachment, Inbound

CHANNEL = "whatsapp"
# Containers that only wrap the real message.
_WRAPPERS = (
    "ephemeralMessage",
    "viewOnceMessage",
    "viewOnceMessageV2",
    "viewOnceMessageV2Extension",
    "documentWithCaptionMessage",
)
# Kinds we do not read but should tell the owner about (they may have meant something).
_UNSUPPORTED_MEDIA = {"videoMessage": "video", "ptvMessage": "video"}


@dataclass(frozen=True, slots=True)
class NormalizeContext:
    owner: str | None  # the owner's number, digits only
    max_media_bytes: int
    own_users: frozenset[str] = frozenset()  # the linked account's user parts (number, LID)
    lids: Mapping[str, str] = field(default_factory=dict)  # LID user -> number, learned
    max_audio_seconds: int = 0  # longer audio is refused before the download; 0: no limit


@dataclass(frozen=True, slots=True)
class MediaRef:
    """Media accepted for download: the adapter fetches ``message`` through the client."""

    kind: str  # image | audio | document
    mime: str
    declared_bytes: int
    label: str  # "image", "voice note 0:07": how the text names it
    captioned: bool  # the Inbound text is the caption, not a placeholder
    message: Any = field(compare=False, repr=False)  # the waE2E Message holding the media
    seconds: int = 0  # audio: its declared length
    name: str = ""  # document: the file name the sender gave


@dataclass(frozen=True, slots=True)
class Normalized:
    inbound: Inbound
    is_self_chat: bool
    is_from_me: bool
    media: MediaRef | None = None


@dataclass(frozen=True, slots=True)
class Skipped:
    reason: str


def _unwrap(message: Any) -> Any:
    for _ in range(4):  # wrappers nest at most a couple of levels
        for name in _WRAPPERS:
            if message.HasField(name):
                message = getattr(message, name).message
                break
        else:
            return message
    return message


def text_of(message: Any) -> str:
    """The plain text a message carries (inside any wrapper), "" when it has none."""
    inner = _unwrap(message)
    if inner.conversation:
        return str(inner.conversation)
    if inner.HasField("extendedTextMessage"):
        return str(inner.extendedTextMessage.text)
    return ""


def _timestamp(raw: int) -> float:
    # neonize sends Unix seconds in older builds and milliseconds in newer ones.
    return raw / 1000.0 if raw > 10**11 else float(raw)


def _duration(seconds: int) -> str:
    return f"{seconds // 60}:{seconds % 60:02d}"


def _quoted_id(content: Any) -> str | None:
    if content.HasField("contextInfo") and content.contextInfo.stanzaID:
        return str(content.contextInfo.stanzaID)
    return None


@dataclass(frozen=True, slots=True)
class _Body:
    text: str
    reply_to: str | None = None
    reaction: str | None = None
    media: MediaRef | None = None
    refused: Attachment | None = None  # audio refused before any download


def _media_body(kind: str, content: Any, message: Any, ctx: NormalizeContext) -> _Body:
    mime = content.mimetype or media.DEFAULT_MIME[kind]
    caption = str(getattr(content, "caption", "") or "")
    name = str(getattr(content, "fileName", "") or "") if kind == "document" else ""
    seconds = int(content.seconds) if kind == "audio" else 0
    if kind == "audio":
        label = "voice note" if content.PTT else "audio"
        if content.seconds:
            label += f" {_duration(content.seconds)}"
    elif name:
        label = f"document {name}"
    else:
        label = kind
    refusal = media.problem(kind, mime, int(content.fileLength), ctx.max_media_bytes)
    if refusal is None and kind == "audio" and 0 < ctx.max_audio_seconds < seconds:
        refusal = (
            f"it is {_duration(seconds)} long; the limit is {_duration(ctx.max_audio_seconds)} "
            "(transcription.max_seconds)"
        )
    if refusal is not None and kind == "audio":
        # Said by the ears in front of the gateway ("🎙 Not heard: ..."), never stored.
        gone = Attachment("audio", "", media.base_mime(mime), seconds=seconds, refused=refusal)
        return _Body(f"[{label}]", _quoted_id(content), refused=gone)
    if refusal is not None:
        note = f"[{label} not received: {refusal}]"
        return _Body(f"{caption}\n{note}" if caption else note, _quoted_id(content))
    ref = MediaRef(
        kind,
        media.base_mime(mime),
        int(content.fileLength),
        label,
        bool(caption),
        message,
        seconds,
        name,
    )
    return _Body(caption or f"[{label}]", _quoted_id(content), media=ref)


def _body(message: Any, ctx: NormalizeContext) -> _Body | Skipped:
    if message.HasField("protocolMessage") or message.HasField("editedMessage"):
        return Skipped("edit, deletion or protocol message")
    if message.HasField("reactionMessage"):
        reaction = message.reactionMessage
        if not reaction.text:
            return Skipped("reaction removed")
        return _Body(str(reaction.text), str(reaction.key.ID) or None, str(reaction.text))
    if message.conversation:
        return _Body(str(message.conversation))
    if message.HasField("extendedTextMessage"):
        ext = message.extendedTextMessage
        return _Body(str(ext.text), _quoted_id(ext))
    if message.HasField("imageMessage"):
        return _media_body("image", message.imageMessage, message, ctx)
    if message.HasField("audioMessage"):
        return _media_body("audio", message.audioMessage, message, ctx)
    if message.HasField("documentMessage"):
        return _media_body("document", message.documentMessage, message, ctx)
    for name, kind in _UNSUPPORTED_MEDIA.items():
        if message.HasField(name):
            content = getattr(message, name)
            caption = str(getattr(content, "caption", "") or "")
            note = f"[{kind} not received: {media.problem(kind, '', 0, 0)}]"
            return _Body(f"{caption}\n{note}" if caption else note, _quoted_id(content))
    return Skipped("no text or supported media (sticker, location, contact, poll...)")


def normalize(event: Any, ctx: NormalizeContext) -> Normalized | Skipped:
    """One ``MessageEv`` -> ``Normalized`` (the ``Inbound`` plus what the adapter needs to
    decide and fetch), or ``Skipped`` with the reason for the log."""
    info = event.Info
    source = info.MessageSource
    if not info.ID:
        return Skipped("no message id")
    if source.Chat.Server in IGNORED_SERVERS:
        return Skipped(f"{source.Chat.Server} message")
    if info.Edit:
        return Skipped("edit, deletion or protocol message")
    body = _body(_unwrap(event.Message), ctx)
    if isinstance(body, Skipped):
        return body
    is_group = bool(source.IsGroup) or source.Chat.Server == GROUP_SERVER
    is_from_me = bool(source.IsFromMe)
    sender = sender_number(source, ctx.lids)
    me = {
        bare_user(str(source.Sender.User)),
        bare_user(str(source.SenderAlt.User)),
        *ctx.own_users,
    } - {""}
    is_self_chat = is_from_me and not is_group and bare_user(str(source.Chat.User)) in me
    from_owner = bool(ctx.owner and sender == ctx.owner) or is_self_chat
    inbound = Inbound(
        channel=CHANNEL,
        chat=jid_str(source.Chat),
        sender=sender,
        message_id=str(info.ID),
        text=body.text,
        timestamp=_timestamp(int(info.Timestamp)),
        is_group=is_group,
        from_owner=from_owner,
        reply_to=body.reply_to,
        reaction=body.reaction,
        attachments=(body.refused,) if body.refused is not None else (),
    )
    return Normalized(inbound, is_self_chat=is_self_chat, is_from_me=is_from_me, media=body.media)
