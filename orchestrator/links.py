"""One conversation across devices (/link): the web chat or the terminal joined to the
owner's WhatsApp or Telegram chat, so both are one session (history, the pending diff,
the active repo).

The phone's chat is the *home*: its session key is the one the pair shares (the gateway
runs a device's messages in it, ``home_of``). Replies follow the device the owner last
wrote from (``route``, the messenger's last step), so an answer, a task's progress and
its diff show where the owner is. Pairing takes a code shown in one chat and typed in the
other within ``TTL`` seconds, once; only the owner, in their own chats (never a group),
may make or use one, whatever a grant says: a member can never join the owner's session.
Links live in SQLite (store/links.py) and are loaded at start; which device was last
used is not kept (after a restart replies go to the phone until the owner writes
elsewhere).
"""

from __future__ import annotations

import hashlib
import secrets
import time
from collections.abc import Callable

from core.events import SessionKey
from orchestrator.store.links import Link, SqliteLinks

TTL = 600.0  # seconds a code can be used
PHONE = ("whatsapp", "telegram")  # where a home is
DESK = ("web", "terminal")  # what joins one
DIGITS = 6


def digest(code: str) -> str:
    return hashlib.sha256(code.encode()).hexdigest()


class Links:
    def __init__(self, store: SqliteLinks, now: Callable[[], float] = time.time) -> None:
        self._store = store
        self._now = now
        self._home: dict[SessionKey, SessionKey] = {}  # device -> home
        self._active: dict[SessionKey, SessionKey] = {}  # home -> the device last used

    async def load(self) -> None:
        self._home = {link.device: link.home for link in await self._store.all()}
        self._active.clear()

    # -- the gateway's and the messenger's lookups (hot path: no I/O) --------------------
    def home_of(self, key: SessionKey) -> SessionKey:
        """The session a chat's messages run in: its home when it is a linked device."""
        return self._home.get(key, key)

    def spoke(self, key: SessionKey) -> None:
        """The owner wrote from ``key``: that pair's replies go there from now on."""
        home = self._home.get(key)
        if home is not None:
            self._active[home] = key
        else:
            self._active.pop(key, None)  # the home itself (or an unlinked chat)

    def route(self, key: SessionKey) -> SessionKey:
        """Where a reply for session ``key`` goes: the device last used, else ``key``."""
        device = self._active.get(key)
        return device if device is not None and self._home.get(device) == key else key

    def linked(self, key: SessionKey) -> list[SessionKey]:
        """The other chats of ``key``'s pair (for /status and /link)."""
        home = self.home_of(key)
        others = [d for d, h in self._home.items() if h == home]
        return [c for c in [home, *others] if c != key]

    # -- /link ---------------------------------------------------------------------------
    async def offer(self, key: SessionKey) -> str:
        """A new code shown in ``key`` (any older one of this chat ends)."""
        code = "".join(secrets.choice("0123456789") for _ in range(DIGITS))
        await self._store.add_code(digest(code), key, self._now() + TTL)
        return code

    async def redeem(self, key: SessionKey, code: str) -> Link | str:
        """Pair ``key`` with the chat the code was shown in; the link, or why not."""
        if not (code.isdigit() and len(code) == DIGITS):
            return f"a code is {DIGITS} digits"
        made = await self._store.redeem(digest(code), self._now(), lambda shown: pair(shown, key))
        if made is None:
            return "no such code, or it was used or has expired (a code works once, for 10 min)"
        if isinstance(made, Link):
            self._home[made.device] = made.home
            self._active[made.home] = key if key == made.device else made.home
        return made

    async def unlink(self, key: SessionKey) -> list[Link]:
        """End ``key``'s links: a device leaves its home; a home lets all its devices go."""
        gone = [Link(d, h) for d, h in self._home.items() if key in (d, h)]
        if gone:
            await self._store.remove(gone)
            for link in gone:
                self._home.pop(link.device, None)
                self._active.pop(link.home, None)
        return gone


def pair(shown: SessionKey, typed: SessionKey) -> Link | str:
    """The link a code shown in ``shown`` and typed in ``typed`` makes, or why not: one
    is the owner's phone chat, the other a device (the web chat or the terminal)."""
    if shown == typed:
        return "type the code in your other chat, not in this one"
    kinds = {shown.channel, typed.channel}
    for home, device in ((shown, typed), (typed, shown)):
        if home.channel in PHONE and device.channel in DESK:
            return Link(device, home)
    if kinds <= set(DESK):
        return "link the web chat or the terminal with your WhatsApp or Telegram chat"
    return "one side must be the web chat or the terminal, the other WhatsApp or Telegram"
