"""Golden tests: real neonize ``MessageEv``s (stored as protobuf JSON) -> the decision the
adapter takes and the ``Inbound`` it delivers. ``FETCH_UPDATE_GOLDENS=1`` rewrites the
``.expected.json`` files; review the diff like code."""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path
from typing import Any

import pytest

from channels.whatsapp import _neonize as nz
from channels.whatsapp.normalize import NormalizeContext
from channels.whatsapp.trigger import Route, TriggerRules, route

from .builders import OWNER, from_json

FIXTURES = Path(__file__).parent / "fixtures" / "inbound"
CASES = sorted(p.name.removesuffix(".event.json") for p in FIXTURES.glob("*.event.json"))
# The Inbound fields this adapter fills; fields other channels add keep their defaults.
FIELDS = (
    "channel",
    "chat",
    "sender",
    "message_id",
    "text",
    "timestamp",
    "is_group",
    "from_owner",
    "reply_to",
    "reaction",
    "attachments",
)
SENT = {"3EB0D1FF000000000001"}  # ids of messages Fetch sent (the diff)
# The app's defaults: whatsapp.max_media_bytes, transcription.max_seconds.
CONTEXT = NormalizeContext(owner=OWNER, max_media_bytes=16 * 1024 * 1024, max_audio_seconds=300)
RULES = TriggerRules()


def as_json(decision: Route) -> dict[str, Any]:
    out: dict[str, Any] = {"deliver": decision.deliver, "reason": decision.reason}
    message = decision.message
    if message is not None:
        full = dataclasses.asdict(message.inbound)
        out["inbound"] = {name: full[name] for name in FIELDS}
        defaults = dataclasses.asdict(
            dataclasses.replace(
                message.inbound,
                **{
                    f.name: f.default
                    for f in dataclasses.fields(message.inbound)
                    if f.name not in FIELDS and f.default is not dataclasses.MISSING
                },
            )
        )
        assert full == defaults, "the adapter set a field the goldens do not cover"
        out["is_self_chat"] = message.is_self_chat
        out["is_from_me"] = message.is_from_me
        out["media"] = (
            None
            if message.media is None
            else {
                "kind": message.media.kind,
                "mime": message.media.mime,
                "declared_bytes": message.media.declared_bytes,
                "label": message.media.label,
                "captioned": message.media.captioned,
                "seconds": message.media.seconds,
                "name": message.media.name,
            }
        )
    return out


def load_event(case: str) -> Any:
    event = from_json((FIXTURES / f"{case}.event.json").read_text(encoding="utf-8"))
    # What neonize hands Python is the wire form parsed with FromString: go through it.
    return nz.MessageEv.FromString(event.SerializeToString())


def test_fixtures_exist() -> None:
    assert len(CASES) >= 25
    for case in CASES:
        assert (FIXTURES / f"{case}.expected.json").exists(), f"no golden for {case}"


@pytest.mark.parametrize("case", CASES)
def test_inbound_golden(case: str) -> None:
    got = json.loads(json.dumps(as_json(route(load_event(case), CONTEXT, RULES, SENT))))
    golden = FIXTURES / f"{case}.expected.json"
    if os.environ.get("FETCH_UPDATE_GOLDENS") == "1":
        golden.write_text(json.dumps(got, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    assert got == json.loads(golden.read_text(encoding="utf-8"))


def test_ids_are_the_whatsapp_ids() -> None:
    """A message replayed after a reconnect carries the same id, and so the same Inbound
    id: the gateway's (channel, message_id) dedupe depends on it."""
    first = route(load_event("owner_direct_text"), CONTEXT, RULES, SENT)
    again = route(load_event("owner_direct_text"), CONTEXT, RULES, SENT)
    assert first.message is not None and again.message is not None
    assert first.message.inbound.message_id == "3EB0C0FFEE000001"
    assert first.message.inbound == again.message.inbound
