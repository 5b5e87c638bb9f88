"""The "is it for Fetch?" rules, table-driven over real normalised events."""

from __future__ import annotations

from typing import Any

import pytest

from channels.whatsapp import _neonize as nz
from channels.whatsapp.normalize import NormalizeContext, Normalized, normalize
from channels.whatsapp.trigger import TriggerRules, addressed_to_fetch, has_trigger
from channels.whatsapp_settings import WhatsAppSettings

from .builders import FRIEND, OWNER, in_group, jid, message_event, self_chat, text_from

CTX = NormalizeContext(owner=OWNER, max_media_bytes=1 << 20)


def norm(event: Any) -> Normalized:
    result = normalize(event, CTX)
    assert isinstance(result, Normalized)
    return result


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("@fetch /status", True),
        ("@Fetch, fix it", True),
        ("  @FETCH: go", True),
        ("@fetch", True),
        ("@fetchy go", False),
        ("@fetch_bot go", False),
        ("ask @fetch later", False),
        ("", False),
    ],
)
def test_has_trigger(text: str, expected: bool) -> None:
    assert has_trigger(text, "@fetch") is expected


def test_rules_from_settings() -> None:
    rules = TriggerRules.from_settings(
        WhatsAppSettings(trigger_in_self_chat=True, trigger_in_direct_chat=False), "@bot"
    )
    assert rules == TriggerRules("@bot", in_self_chat=True, in_direct_chat=False)


owner_to_friend = message_event(
    nz.Message(conversation="see you"), id="X1", chat=jid(FRIEND), sender=jid(OWNER), from_me=True
)


@pytest.mark.parametrize(
    ("event", "rules", "deliver"),
    [
        (in_group(OWNER, "/status"), TriggerRules(), False),
        (in_group(OWNER, "@fetch /status"), TriggerRules(), True),
        (self_chat("/status"), TriggerRules(), True),
        (self_chat("/status"), TriggerRules(in_self_chat=True), False),
        (text_from(OWNER, "/status"), TriggerRules(), True),
        (text_from(OWNER, "/status"), TriggerRules(in_direct_chat=True), False),
        (text_from(OWNER, "@fetch /status"), TriggerRules(in_direct_chat=True), True),
        (owner_to_friend, TriggerRules(), False),
    ],
)
def test_trigger_table(event: Any, rules: TriggerRules, deliver: bool) -> None:
    assert addressed_to_fetch(norm(event), rules, set()).deliver is deliver
