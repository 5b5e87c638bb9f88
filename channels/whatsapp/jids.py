"""WhatsApp addresses (JIDs) as Fetch stores them: ``user@server``, without a device.

``Inbound.chat`` is the full chat JID string so a reply can go back to exactly the chat
it came from (a person ``…@s.whatsapp.net``, a group ``…@g.us``, a hidden-number
``…@lid``); ``Inbound.sender`` is the sender's phone number (digits) when WhatsApp
gives it, which is what ``whatsapp.owner`` and the allowlist are written in.

A person appears in several forms: a phone-number JID (``491701234567@s.whatsapp.net``,
in its string form with a device: ``491701234567:12@s.whatsapp.net``) or a LID
(``…@lid``, hiding the number), with the other form in ``SenderAlt`` when WhatsApp
sends it. ``lid_pair`` reads the LID -> number mapping off an event; the adapter keeps
it (``Ledger``) so a later LID-only message still names the number.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from channels.whatsapp._neonize import JID

USER_SERVER = "s.whatsapp.net"
GROUP_SERVER = "g.us"
LID_SERVER = "lid"
# Status updates and newsletters arrive as messages too; nobody is talking to Fetch there.
IGNORED_SERVERS = frozenset({"broadcast", "newsletter"})


def jid_str(jid: Any) -> str:
    return f"{jid.User}@{jid.Server}" if jid.Server else str(jid.User)


def parse_jid(text: str) -> Any:
    """``"15551234567@s.whatsapp.net"`` (or bare digits) -> a neonize ``JID``."""
    user, _, server = text.partition("@")
    # proto2 marks every JID field required: a JID missing one cannot be serialised.
    return JID(
        User=user, Server=server or USER_SERVER, RawAgent=0, Device=0, Integrator=0, IsEmpty=False
    )


def phone_digits(number: str | None) -> str:
    """``"+1 (555) 123-4567"`` -> ``"15551234567"``; empty for None."""
    return re.sub(r"\D", "", number or "")


def bare_user(user: str) -> str:
    """``"491701234567:12"`` / ``"491701234567.0:12"`` (agent, device) -> the user."""
    return user.split(":", 1)[0].split(".", 1)[0]


def lid_pair(source: Any) -> tuple[str, str] | None:
    """(LID user, phone number) when the event carries both forms of the sender."""
    sender, alt = source.Sender, source.SenderAlt
    if sender.Server == LID_SERVER and alt.Server == USER_SERVER and alt.User:
        return bare_user(str(sender.User)), bare_user(str(alt.User))
    if sender.Server == USER_SERVER and alt.Server == LID_SERVER and alt.User:
        return bare_user(str(alt.User)), bare_user(str(sender.User))
    return None


def _phone_jid(source: Any) -> Any:
    sender, alt = source.Sender, source.SenderAlt
    return alt if sender.Server == LID_SERVER and alt.User and alt.Server == USER_SERVER else sender


def participant(source: Any, lids: Mapping[str, str] | None = None) -> str:
    """The sender as a quote names them: their phone-number JID when known."""
    jid = _phone_jid(source)
    user = bare_user(str(jid.User))
    if jid.Server == LID_SERVER and lids and user in lids:
        return f"{lids[user]}@{USER_SERVER}"
    return f"{user}@{jid.Server}" if jid.Server else user


def sender_number(source: Any, lids: Mapping[str, str] | None = None) -> str:
    """The sender's phone number, or their opaque id when WhatsApp hides the number.

    With LID addressing the sender is ``…@lid`` and the phone-number JID, when known,
    is in ``SenderAlt``; without it, ``lids`` (learned earlier) may still know it.
    """
    jid = _phone_jid(source)
    user = bare_user(str(jid.User))
    if jid.Server == LID_SERVER and lids:
        return lids.get(user, user)
    return user
