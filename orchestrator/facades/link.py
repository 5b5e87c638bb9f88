"""/link's port: one conversation across devices (orchestrator/links.py), with who may
pair what checked here, whatever a grant says (instincts ``Linking``)."""

from __future__ import annotations

from contextlib import suppress

from core.errors import FetchError
from core.events import SessionKey
from core.state import State
from orchestrator.links import DESK, PHONE, TTL, Links
from orchestrator.messenger import Messenger
from orchestrator.permissions.model import OWNER, Subject
from orchestrator.permissions.service import Permissions
from orchestrator.session import Sessions

NAMES = {"whatsapp": "WhatsApp", "telegram": "Telegram", "web": "the web chat",
         "terminal": "the terminal"}  # fmt: skip


def named(key: SessionKey) -> str:
    return NAMES.get(key.channel, key.channel)


class LinkFacade:
    def __init__(
        self,
        links: Links,
        permissions: Permissions,
        messenger: Messenger,
        sessions: Sessions,
        subject: Subject,
        chat: SessionKey,
    ) -> None:
        self._links = links
        self._messenger = messenger
        self._sessions = sessions
        self._permissions = permissions
        self._subject = subject
        self._chat = chat  # the chat typed in (a linked device's own, not its home's)

    def _refused(self) -> str | None:
        # Only the owner, in their own chat: a grant of /link never lets a member join
        # the owner's session, and a group is nobody's own chat.
        if self._subject.id != OWNER:
            return "🔒 Only the owner can link chats."
        if self._chat.channel not in (*PHONE, *DESK):
            return f"🔗 {named(self._chat)} cannot be linked."
        if self._permissions.is_group(self._chat):
            return "🔒 A group cannot be linked: use your own chat with Fetch."
        return None

    async def _busy(self) -> str | None:
        """A desk chat joins its home's session and its own is set aside until /link off:
        nothing may wait in it (a diff, a question, a paused task)."""
        chat = self._chat
        if chat.channel not in DESK or self._links.home_of(chat) != chat:
            return None
        own = await self._sessions.get(chat)
        if own.state is State.ALERT:
            return None
        return (
            f"⏸ Something waits in {named(chat)} ({own.state.value}): answer it or /stop it "
            "first, then /link."
        )

    def status(self) -> str:
        others = self._links.linked(self._chat)
        if not others:
            return ""
        return "🔗 one conversation with " + ", ".join(named(k) for k in others)

    async def offer(self) -> str:
        refused = self._refused() or await self._busy()
        if refused:
            return refused
        code = await self._links.offer(self._chat)
        other = (
            "the web chat or the terminal"
            if self._chat.channel in PHONE
            else ("your WhatsApp or Telegram chat with Fetch")
        )
        return (
            f"🔗 Link code: {code}\nIn {other}, send /link {code} within "
            f"{TTL / 60:.0f} minutes; it works once. Then both are one conversation "
            "(history, the pending diff, the active repo). /link off undoes it."
        )

    async def redeem(self, code: str) -> str:
        refused = self._refused() or await self._busy()
        if refused:
            return refused
        made = await self._links.redeem(self._chat, code)
        if isinstance(made, str):
            return f"🤔 Not linked: {made}."
        return (
            f"🔗 Linked: {named(made.device)} and {named(made.home)} are one conversation "
            f"now (the session of {named(made.home)}). Replies go where you last wrote. "
            "/link off undoes it."
        )

    async def unlink(self) -> str:
        refused = self._refused()
        if refused:
            return refused
        gone = await self._links.unlink(self._chat)
        if not gone:
            return "🔗 This chat is not linked."
        pairs = "; ".join(f"{named(g.device)} from {named(g.home)}" for g in gone)
        text = f"🔗 Unlinked {pairs}: each chat has its own conversation again."
        # The reply goes to the session's home; each device that left hears it too.
        for link in gone:
            with suppress(FetchError):
                await self._messenger.send(link.device, text)
        return text
