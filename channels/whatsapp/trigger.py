"""Is this WhatsApp message meant for Fetch? Decided before the gateway sees it.

The gateway strips a leading ``@fetch`` and checks who may talk; this decides which
messages are *addressed* to Fetch at all, so a group's ordinary chatter never reaches the
gateway (it is only logged here):

1. A reaction counts only when it is on a message Fetch sent (👍/👎 on a diff).
2. A reply that quotes a message Fetch sent counts, anywhere: answering Fetch is
   addressing it (that is how ``yes`` under a diff works in a group).
3. A message starting with the trigger (``@fetch``) counts, anywhere.
4. Otherwise: in a group, no. In the owner's self-chat ("Message yourself") and in a
   direct chat with Fetch's number, yes unless ``trigger_in_self_chat`` /
   ``trigger_in_direct_chat`` say the trigger is required there. A message the linked
   account itself wrote in a chat with someone else (Fetch linked to the owner's own
   number, the owner talking to a friend) always needs the trigger.
"""

from __future__ import annotations

from collections.abc import Container
from dataclasses import dataclass
from typing import Any

from channels.whatsapp.normalize import (
    NormalizeContext,
    Normalized,
    Skipped,
    normalize,
)
from channels.whatsapp_settings import WhatsAppSettings


@dataclass(frozen=True, slots=True)
class TriggerRules:
    trigger: str = "@fetch"
    in_self_chat: bool = False  # True: the self-chat also needs the trigger
    in_direct_chat: bool = False  # True: direct chats also need the trigger

    @classmethod
    def from_settings(cls, settings: WhatsAppSettings, trigger: str) -> TriggerRules:
        return cls(trigger, settings.trigger_in_self_chat, settings.trigger_in_direct_chat)


@dataclass(frozen=True, slots=True)
class Verdict:
    deliver: bool
    reason: str


def has_trigger(text: str, trigger: str) -> bool:
    """``@fetch do x`` and ``@Fetch, do x`` yes; ``@fetchy`` and ``ask @fetch`` no."""
    head = text.lstrip()
    if not trigger or not head.lower().startswith(trigger.lower()):
        return False
    rest = head[len(trigger) :]
    return not rest or not (rest[0].isalnum() or rest[0] == "_")


def addressed_to_fetch(
    message: Normalized, rules: TriggerRules, sent_by_fetch: Container[str]
) -> Verdict:
    inbound = message.inbound
    quotes_fetch = inbound.reply_to is not None and inbound.reply_to in sent_by_fetch
    if inbound.reaction is not None:
        if quotes_fetch:
            return Verdict(True, "reaction to a Fetch message")
        return Verdict(False, "reaction to a message Fetch did not send")
    if quotes_fetch:
        return Verdict(True, "reply to a Fetch message")
    if has_trigger(inbound.text, rules.trigger):
        return Verdict(True, "trigger")
    if inbound.is_group:
        return Verdict(False, f"group message without {rules.trigger}")
    if message.is_self_chat:
        if rules.in_self_chat:
            return Verdict(False, f"self-chat requires {rules.trigger}")
        return Verdict(True, "self-chat")
    if message.is_from_me:
        return Verdict(False, f"own message to someone else without {rules.trigger}")
    if rules.in_direct_chat:
        return Verdict(False, f"direct chat requires {rules.trigger}")
    return Verdict(True, "direct chat")


@dataclass(frozen=True, slots=True)
class Route:
    """The whole inbound decision for one event; ``message`` is None when it was skipped."""

    deliver: bool
    reason: str
    message: Normalized | None = None


def route(
    event: Any, ctx: NormalizeContext, rules: TriggerRules, sent_by_fetch: Container[str]
) -> Route:
    """Echo of Fetch's own message? -> normalise -> addressed to Fetch? (pure)"""
    if str(event.Info.ID) in sent_by_fetch:
        return Route(False, "echo of a message Fetch sent")
    message = normalize(event, ctx)
    if isinstance(message, Skipped):
        return Route(False, message.reason)
    verdict = addressed_to_fetch(message, rules, sent_by_fetch)
    return Route(verdict.deliver, verdict.reason, message)
