"""WhatsApp through neonize (whatsmeow). Importing this loads neonize's Go library.

``adapter`` (the channel) · ``client`` (the port around neonize, and its real
implementation) · ``normalize`` (MessageEv -> Inbound) · ``trigger`` (is it for Fetch?) ·
``format`` (WhatsApp markup; the messenger cuts) · ``pacing`` · ``ledger`` (chats that wrote, ids
sent) · ``health`` · ``media`` · ``pairing``. See ``docs/whatsapp.md``.
"""

from channels.whatsapp.adapter import WhatsAppChannel
from channels.whatsapp.errors import RecipientNotAllowed, WhatsAppUnavailable
from channels.whatsapp.pairing import pair, run_pair

__all__ = ["RecipientNotAllowed", "WhatsAppChannel", "WhatsAppUnavailable", "pair", "run_pair"]
