"""WhatsApp addresses (JIDs) as Fetch stores them: ``user@server``, without a device.

``Inbound.chat`` is the full chat JID string so a reply can go back to exactly the chat
it came from (a person ``…@s.whatsapp.net``, a group ``…@g.us``, a hidden-number
``…@lid``); ``Inbound.sender`` is the sender's phone number (digits) when WhatsApp
gives it, which is what ``whatsapp.owner`` and the allowlist are written in.
"""

from __future__ import annotations

import re
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
    return JID(User=user, Server=server or USER_SERVER, RawAgent=0, Device=0, Integrator=0,
               IsEmpty=False)


def phone_digits(number: str | None) -> str:
    """``"+1 (555) 123-4567"`` -> ``"15551234567"``; empty for None."""
    return re.sub(r"\D", "", number or "")


def _phone_jid(source: Any) -> Any:
    sender, alt = source.Sender, source.SenderAlt
    return alt if sender.Server == LID_SERVER and alt.User and alt.Server == USER_SERVER \
        else sender


def participant(source: Any) -> str:
    """The sender as a quote names them: their phone-number JID when known."""
    return jid_str(_phone_jid(source))


def sender_number(source: Any) -> str:
    """The sender's phone number, or their opaque id when WhatsApp hides the number.

    With LID addressing the sender is ``…@lid`` and the phone-number JID, when known,
    is in ``SenderAlt``.
    """
    return str(_phone_jid(source).User)
