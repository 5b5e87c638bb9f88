"""Writes ``fixtures/inbound/<case>.event.json``: one real neonize ``MessageEv`` per case.

Run ``python -m tests.channels.whatsapp.build_fixtures`` to rebuild them after changing a
case; the ``.expected.json`` goldens are rewritten by running the golden test with
``FETCH_UPDATE_GOLDENS=1`` (then read the diff: that is the review).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from neonize.proto.waE2E.WAWebProtobufsE2E_pb2 import (
    AudioMessage,
    DocumentMessage,
    ProtocolMessage,
    StickerMessage,
    VideoMessage,
)

from channels.whatsapp import _neonize as nz

from .builders import (
    FETCH,
    FRIEND,
    GROUP,
    OWNER,
    T0,
    ephemeral,
    image,
    in_group,
    jid,
    message_event,
    quoting,
    reaction,
    self_chat,
    text_from,
    to_json,
    voice_note,
)

HERE = Path(__file__).parent / "fixtures" / "inbound"
DIFF_ID = "3EB0D1FF000000000001"  # a message Fetch sent (see the golden test's SENT)


def cases() -> dict[str, Any]:
    dm = {"chat": jid(OWNER), "sender": jid(OWNER)}
    return {
        "owner_direct_text": text_from(
            OWNER, "fix the failing login test in myapp", id="3EB0C0FFEE000001"
        ),
        "owner_self_chat": self_chat("/status", id="3EB0C0FFEE000002"),
        "owner_self_chat_other_device": message_event(
            nz.Message(conversation="@fetch /undo"),
            id="3EB0C0FFEE000003",
            chat=jid(OWNER),
            sender=jid(OWNER, device=12),
            from_me=True,
        ),
        "reply_quoting_fetch": message_event(
            quoting("yes", DIFF_ID, "📝 myapp: 1 file, +3 −1"), id="3EB0C0FFEE000004", **dm
        ),
        "reply_quoting_other": message_event(
            quoting("what about this one?", "3EB0FRIEND0001"), id="3EB0C0FFEE000005", **dm
        ),
        "reaction_thumbs_up_on_diff": reaction(OWNER, DIFF_ID, "👍", id="3EB0C0FFEE000006"),
        "reaction_on_other_message": reaction(OWNER, "3EB0FRIEND0001", "😂", id="3EB0C0FFEE000007"),
        "reaction_removed": reaction(OWNER, DIFF_ID, "", id="3EB0C0FFEE000008"),
        "group_with_trigger": in_group(OWNER, "@fetch /status", id="3EB0C0FFEE000009"),
        "group_without_trigger": in_group(
            FRIEND, "lunch at 1?", id="3EB0C0FFEE00000A", pushname="Friend"
        ),
        "group_trigger_lookalike": in_group(OWNER, "@fetchy do it", id="3EB0C0FFEE00000B"),
        "group_reply_to_fetch": message_event(
            quoting("no", DIFF_ID),
            id="3EB0C0FFEE00000C",
            chat=jid(GROUP, "g.us"),
            sender=jid(OWNER),
            group=True,
        ),
        "stranger_direct": text_from(
            FRIEND, "hi, who is this?", id="3EB0C0FFEE00000D", pushname="Friend"
        ),
        "owner_to_friend_without_trigger": message_event(
            nz.Message(conversation="see you at 8"),
            id="3EB0C0FFEE00000E",
            chat=jid(FRIEND),
            sender=jid(OWNER),
            from_me=True,
        ),
        "owner_to_friend_with_trigger": message_event(
            nz.Message(conversation="@fetch remind me at 8"),
            id="3EB0C0FFEE00000F",
            chat=jid(FRIEND),
            sender=jid(OWNER),
            from_me=True,
        ),
        "lid_sender": message_event(
            nz.Message(conversation="/help"),
            id="3EB0C0FFEE000010",
            chat=jid("207391234567890", "lid"),
            sender=jid("207391234567890", "lid"),
            sender_alt=jid(OWNER),
        ),
        "ephemeral_text": message_event(
            ephemeral(quoting("run the tests", "3EB0OLD00001")), id="3EB0C0FFEE000011", **dm
        ),
        "timestamp_milliseconds": text_from(
            OWNER, "/help", id="3EB0C0FFEE000012", timestamp=T0 * 1000 + 250
        ),
        "image_with_caption": message_event(
            image("@fetch what is wrong in this screenshot?"),
            id="3EB0C0FFEE000013",
            kind="media",
            **dm,
        ),
        "image_without_caption": message_event(image(), id="3EB0C0FFEE000014", kind="media", **dm),
        "image_too_large": message_event(
            image("look", size=20 * 1024 * 1024), id="3EB0C0FFEE000015", kind="media", **dm
        ),
        "image_gif_refused": message_event(
            image(mime="image/gif"), id="3EB0C0FFEE000016", kind="media", **dm
        ),
        "voice_note": message_event(voice_note(67), id="3EB0C0FFEE000017", kind="media", **dm),
        "voice_note_too_long_for_the_ears": message_event(
            voice_note(601), id="3EB0C0FFEE00001D", kind="media", **dm
        ),
        "audio_midi_refused": message_event(
            nz.Message(
                audioMessage=AudioMessage(
                    mimetype="audio/x-midi", seconds=12, PTT=False, fileLength=4000
                )
            ),
            id="3EB0C0FFEE00001E",
            kind="media",
            **dm,
        ),
        "document_log": message_event(
            nz.Message(
                documentMessage=DocumentMessage(
                    mimetype="text/plain",
                    title="crash.log",
                    fileName="crash.log",
                    caption="why?",
                    fileLength=2048,
                    directPath="/v/t62.7119-24/doc",
                    mediaKey=b"k" * 32,
                )
            ),
            id="3EB0C0FFEE00001F",
            kind="media",
            **dm,
        ),
        "document_zip_refused": message_event(
            nz.Message(
                documentMessage=DocumentMessage(
                    mimetype="application/zip", fileName="src.zip", fileLength=4096
                )
            ),
            id="3EB0C0FFEE000020",
            kind="media",
            **dm,
        ),
        "video_unsupported": message_event(
            nz.Message(
                videoMessage=VideoMessage(
                    mimetype="video/mp4", caption="see this", fileLength=5_000_000
                )
            ),
            id="3EB0C0FFEE000018",
            kind="media",
            **dm,
        ),
        "sticker_ignored": message_event(
            nz.Message(stickerMessage=StickerMessage(mimetype="image/webp")),
            id="3EB0C0FFEE000019",
            kind="media",
            **dm,
        ),
        "status_broadcast": message_event(
            nz.Message(conversation="my holiday"),
            id="3EB0C0FFEE00001A",
            chat=jid("status", "broadcast"),
            sender=jid(FRIEND),
        ),
        "edit_of_earlier_message": message_event(
            nz.Message(protocolMessage=ProtocolMessage(type=ProtocolMessage.MESSAGE_EDIT)),
            id="3EB0C0FFEE00001B",
            edit="1",
            **dm,
        ),
        "echo_of_fetch_reply": message_event(
            nz.Message(conversation="✅ Committed abc1234"),
            id=DIFF_ID,
            chat=jid(OWNER),
            sender=jid(OWNER, device=33),
            from_me=True,
        ),
        "direct_to_fetch_number_from_self": message_event(
            nz.Message(conversation="note to self"),
            id="3EB0C0FFEE00001C",
            chat=jid(FETCH),
            sender=jid(FETCH),
            from_me=True,
        ),
    }


def main() -> None:
    HERE.mkdir(parents=True, exist_ok=True)
    for name, event in cases().items():
        assert event.IsInitialized(), name  # every required field set, as Go sends it
        (HERE / f"{name}.event.json").write_text(to_json(event), encoding="utf-8")
    print(f"wrote {len(cases())} events to {HERE}")


if __name__ == "__main__":
    main()
