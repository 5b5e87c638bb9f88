"""/link with WhatsApp as the phone (issue 23, 6): the real adapter over the fake client
(neonize's wire bytes) and the terminal in one app. The code is shown on WhatsApp and
typed in the terminal; then the terminal speaks in the WhatsApp chat's session and the
replies follow the owner. A group is never linked, not even by the owner."""

from __future__ import annotations

import re
from collections.abc import Callable

import channels.whatsapp._neonize  # noqa: F401  (first: it undoes neonize's import side effects)
from channels.terminal import TerminalChannel
from orchestrator.app import build_app
from orchestrator.config import Settings
from tests.channels.whatsapp.builders import OWNER, in_group, text_from
from tests.channels.whatsapp.fake_client import FakeWhatsAppClient
from tests.channels.whatsapp.whole_app import OWNER_DIRECT, wait_for, whatsapp_channel
from tests.conftest import Driver

OWNER_DM = f"{OWNER}@s.whatsapp.net"


async def test_a_code_shown_on_whatsapp_links_the_terminal(
    make_settings: Callable[..., Settings],
) -> None:
    settings = make_settings(**OWNER_DIRECT)
    client = FakeWhatsAppClient()
    terminal = TerminalChannel(settings.terminal.chat)
    async with build_app(settings, channels=[terminal, whatsapp_channel(settings, client)]) as app:
        fetch = Driver(app, terminal)
        # In a group, even the owner gets no code.
        client.emit(in_group(OWNER, "@fetch /link", id="3EB0LINK0001", pushname="me"))
        await wait_for(client, "A group cannot be linked")
        client.emit(text_from(OWNER, "/link", id="3EB0LINK0002", pushname="me"))
        _, offer = await wait_for(client, "Link code")
        code = re.search(r"Link code: (\d{6})", offer)
        assert code is not None, offer
        linked = await fetch.ask(f"/link {code[1]}", "Linked")
        assert "the terminal and WhatsApp" in " ".join(linked.split())
        # The terminal now speaks in the WhatsApp chat's session: its repo is chosen for
        # both, and the reply comes back to the terminal, where the owner wrote.
        await fetch.ask("/workspace demo", "Now working in demo")
        status = await fetch.ask("/status", "Fetch ·")
        assert "one conversation: WhatsApp + the terminal" in " ".join(status.split())
        assert app.services is not None
        home = await app.services.sessions.get(app.services.links.home_of(fetch.terminal_key()))
        assert home.key.chat == OWNER_DM and home.data.repo == "demo"
        # Back on the phone: replies go there again.
        seen = len(client.calls)
        client.emit(text_from(OWNER, "/status", id="3EB0LINK0003", pushname="me"))
        _, text = await wait_for(client, "repo: demo", after=seen)
        assert "one conversation" in text
