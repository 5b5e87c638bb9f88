"""``links`` and ``link_codes`` (migration 15): which device chats share the owner's
phone chat's session (/link, orchestrator/links.py), and the one-time codes that pair
them. Every change is a command's effect (``Database.effect``): a kill at /link's reply
can neither lose nor repeat it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from core.events import SessionKey
from orchestrator.store.engine import Engine


@dataclass(frozen=True, slots=True)
class Link:
    device: SessionKey  # the web chat's or the terminal's chat
    home: SessionKey  # the owner's WhatsApp or Telegram chat: the session they share


class SqliteLinks:
    def __init__(self, db: Engine) -> None:
        self._db = db

    async def all(self) -> list[Link]:
        rows = await self._db.conn.execute_fetchall(
            "SELECT device_channel, device_chat, home_channel, home_chat FROM links"
        )
        return [
            Link(SessionKey(str(r[0]), str(r[1])), SessionKey(str(r[2]), str(r[3]))) for r in rows
        ]

    async def add_code(self, code_hash: str, shown_in: SessionKey, expires: float) -> None:
        """A code shown in ``shown_in``; any older unused code of that chat ends."""
        async with self._db.effect() as conn:
            await conn.execute(
                "DELETE FROM link_codes WHERE channel=? AND chat=? AND used IS NULL",
                (shown_in.channel, shown_in.chat),
            )
            await conn.execute(
                "INSERT INTO link_codes(code_hash, channel, chat, expires) VALUES (?,?,?,?)",
                (code_hash, shown_in.channel, shown_in.chat, expires),
            )

    async def redeem(
        self,
        code_hash: str,
        now: float,
        pair: Callable[[SessionKey], Link | str],
    ) -> Link | str | None:
        """Use the code: ``pair`` gets the chat it was shown in and says the link to make
        (or why not, a refusal that leaves the code unused). One transaction: the code
        is spent exactly when the link is made. None: no such code, used, or expired."""
        async with self._db.effect() as conn:
            cur = await conn.execute(
                "SELECT channel, chat FROM link_codes WHERE code_hash=? AND used IS NULL"
                " AND expires > ?",
                (code_hash, now),
            )
            row = await cur.fetchone()
            if row is None:
                return None
            made = pair(SessionKey(str(row[0]), str(row[1])))
            if isinstance(made, str):
                return made
            await conn.execute("UPDATE link_codes SET used=? WHERE code_hash=?", (now, code_hash))
            await conn.execute(
                "INSERT INTO links(device_channel, device_chat, home_channel, home_chat,"
                " created) VALUES (?,?,?,?,?) ON CONFLICT(device_channel, device_chat) DO"
                " UPDATE SET home_channel=excluded.home_channel,"
                " home_chat=excluded.home_chat, created=excluded.created",
                (made.device.channel, made.device.chat, made.home.channel, made.home.chat, now),
            )
            # Codes past their time are of no use to anyone: kept no longer.
            await conn.execute("DELETE FROM link_codes WHERE expires <= ?", (now,))
            return made

    async def remove(self, links: list[Link]) -> None:
        async with self._db.effect() as conn:
            for link in links:
                await conn.execute(
                    "DELETE FROM links WHERE device_channel=? AND device_chat=?",
                    (link.device.channel, link.device.chat),
                )
