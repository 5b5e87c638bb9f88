"""Real neonize event protobufs, built offline the way neonize's Go side fills them.

Every required proto2 field is set (Go always sets them), so each event serialises to
the exact bytes neonize hands to Python and parses back with ``FromString``.
"""

from __future__ import annotations

from typing import Any

from google.protobuf import json_format
from neonize.proto.waCommon.WACommon_pb2 import MessageKey
from neonize.proto.waE2E.WAWebProtobufsE2E_pb2 import (
    AudioMessage,
    ContextInfo,
    ExtendedTextMessage,
    FutureProofMessage,
    ImageMessage,
    ReactionMessage,
)

from channels.whatsapp import _neonize as nz

OWNER = "15551234567"  # the owner's phone number
FETCH = "15557654321"  # the number Fetch is linked to
FRIEND = "447700900123"
GROUP = "120363041234567890"
T0 = 1763700000


def jid(user: str, server: str = "s.whatsapp.net", device: int = 0) -> Any:
    return nz.JID(User=user, Server=server, RawAgent=0, Device=device, Integrator=0, IsEmpty=False)


def no_jid() -> Any:
    return nz.JID(User="", Server="", RawAgent=0, Device=0, Integrator=0, IsEmpty=True)


def message_event(
    message: Any,
    *,
    id: str,
    chat: Any,
    sender: Any,
    from_me: bool = False,
    group: bool = False,
    sender_alt: Any = None,
    timestamp: int = T0,
    pushname: str = "Owner",
    edit: str = "",
    kind: str = "text",
) -> Any:
    source = nz.MessageSource(
        Chat=chat,
        Sender=sender,
        IsFromMe=from_me,
        IsGroup=group,
        SenderAlt=sender_alt if sender_alt is not None else no_jid(),
        RecipientAlt=no_jid(),
        BroadcastListOwner=no_jid(),
    )
    info = nz.MessageInfo(
        MessageSource=source,
        ID=id,
        ServerID=0,
        Type=kind,
        Pushname=pushname,
        Timestamp=timestamp,
        Category="",
        Multicast=False,
        MediaType="",
        Edit=edit,
    )
    return nz.MessageEv(
        Info=info,
        Message=message,
        IsEphemeral=False,
        IsViewOnce=False,
        IsViewOnceV2=False,
        IsViewOnceV2Extension=False,
        IsDocumentWithCaption=False,
        IsLottieSticker=False,
        IsEdit=bool(edit),
        UnavailableRequestID="",
        RetryCount=0,
    )


def text_from(user: str, text: str, *, id: str = "3EB0A1", **kw: Any) -> Any:
    """A direct message from ``user`` to Fetch's number."""
    return message_event(
        nz.Message(conversation=text), id=id, chat=jid(user), sender=jid(user), **kw
    )


def self_chat(text: str, *, id: str = "3EB0S1", user: str = OWNER) -> Any:
    """The linked account's own "Message yourself" chat (sent from the phone: device 0)."""
    return message_event(
        nz.Message(conversation=text), id=id, chat=jid(user), sender=jid(user), from_me=True
    )


def in_group(user: str, text: str, *, id: str = "3EB0G1", **kw: Any) -> Any:
    return message_event(
        nz.Message(conversation=text),
        id=id,
        chat=jid(GROUP, "g.us"),
        sender=jid(user),
        group=True,
        **kw,
    )


def reaction(user: str, target_id: str, emoji: str, *, id: str = "3EB0R1", chat: Any = None) -> Any:
    msg = nz.Message(
        reactionMessage=ReactionMessage(
            key=MessageKey(remoteJID=f"{user}@s.whatsapp.net", fromMe=True, ID=target_id),
            text=emoji,
            senderTimestampMS=T0 * 1000,
        )
    )
    return message_event(
        msg, id=id, chat=chat if chat is not None else jid(user), sender=jid(user), kind="reaction"
    )


def quoting(text: str, quoted_id: str, quoted_text: str = "earlier") -> Any:
    """An extendedTextMessage replying to (quoting) ``quoted_id``."""
    return nz.Message(
        extendedTextMessage=ExtendedTextMessage(
            text=text,
            contextInfo=ContextInfo(
                stanzaID=quoted_id,
                participant=f"{FETCH}@s.whatsapp.net",
                quotedMessage=nz.Message(conversation=quoted_text),
            ),
        )
    )


def image(caption: str = "", *, mime: str = "image/jpeg", size: int = 123_456) -> Any:
    return nz.Message(
        imageMessage=ImageMessage(
            mimetype=mime,
            caption=caption,
            fileLength=size,
            height=800,
            width=600,
            directPath="/v/t62.7118-24/abc",
            mediaKey=b"k" * 32,
            fileSHA256=b"s" * 32,
            fileEncSHA256=b"e" * 32,
        )
    )


def voice_note(seconds: int = 7, *, size: int = 9_876) -> Any:
    return nz.Message(
        audioMessage=AudioMessage(
            mimetype="audio/ogg; codecs=opus",
            seconds=seconds,
            PTT=True,
            fileLength=size,
            directPath="/v/t62.7117-24/def",
            mediaKey=b"k" * 32,
        )
    )


def ephemeral(message: Any) -> Any:
    return nz.Message(ephemeralMessage=FutureProofMessage(message=message))


def to_json(event: Any) -> str:
    return json_format.MessageToJson(event, ensure_ascii=False, indent=2) + "\n"


def from_json(text: str) -> Any:
    return json_format.Parse(text, nz.MessageEv())
