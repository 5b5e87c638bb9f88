"""The durable outbox (``outbox``, migration 14): what must reach a chat whether or not
its channel is up.

Two kinds of rows:

* **notices** (``event`` empty): what a crash left, told at start-up (a task cut short,
  an undo settled from git). Written before any channel starts, with ``sent`` NULL, and
  sent by ``Messenger.deliver_held`` once the channels are up; a failed send stays
  waiting for the next start, up to ``MAX_ATTEMPTS``. Start-up never waits on a channel.
  Reading them *claims* them (``claimed``, migration 17): one UPDATE that only rows no
  one claimed match, so two processes on one PostgreSQL database that run the same
  channel never both send a notice (the second's UPDATE waits on the first's row locks,
  then finds them claimed). A claim is good for ``CLAIM_LEASE``: a process killed
  between claim and send leaves it to another after that (on SQLite, one process owns
  the file, so a start takes every unsent notice, as before the claim).
* **the web chat's keep** (``event`` set, ``sent`` set): every reply the web chat's
  page will read, so one that came while no page was open is there after a restart.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass

from core.events import SessionKey
from orchestrator.store.engine import Engine

MAX_ATTEMPTS = 5  # a notice a channel refused this often is dropped (and logged)
# How long a claim keeps a notice from other processes: longer than any send takes, and
# the spacing of the retries of a refused one while processes live (PostgreSQL).
CLAIM_LEASE = 120.0


@dataclass(frozen=True, slots=True)
class Held:
    id: int
    key: SessionKey
    text: str
    attempts: int


class SqliteOutbox:
    def __init__(self, db: Engine) -> None:
        self._db = db

    # -- notices -----------------------------------------------------------------------
    async def hold(self, key: SessionKey, text: str) -> int:
        """A notice that waits for its channel; its id."""
        cur = await self._db.write(
            "INSERT INTO outbox(channel, chat, text, created) VALUES (?,?,?,?)",
            (key.channel, key.chat, text, time.time()),
        )
        return int(cur.lastrowid or 0)

    async def held(self, channel: str) -> list[Held]:
        """Claim the notices still waiting for ``channel`` (none another live process
        claimed), oldest first: the caller sends each and says ``sent`` or ``failed``."""
        now = time.time()
        # SQLite: this process alone owns the file, so an earlier claim was a stopped
        # process's (or a refusal this start retries, as before claims existed).
        cutoff = now if self._db.dialect == "sqlite" else now - CLAIM_LEASE
        async with self._db.transaction(rows_locked=True) as conn:
            cur = await conn.execute(
                "UPDATE outbox SET claimed=? WHERE channel=? AND sent IS NULL AND event=''"
                " AND (claimed IS NULL OR claimed < ?) RETURNING id, chat, text, attempts",
                (now, channel, cutoff),
            )
            rows = list(await cur.fetchall())
        held = [Held(int(r[0]), SessionKey(channel, str(r[1])), str(r[2]), int(r[3])) for r in rows]
        return sorted(held, key=lambda h: h.id)  # RETURNING keeps no order

    async def sent(self, notice_id: int) -> None:
        await self._db.write("UPDATE outbox SET sent=? WHERE id=?", (time.time(), notice_id))

    async def failed(self, notice_id: int) -> None:
        """One more refused attempt; past ``MAX_ATTEMPTS`` the notice is given up. The
        claim stays: on PostgreSQL the notice is tried again once it has run out."""
        await self._db.write(
            "UPDATE outbox SET attempts=attempts+1, sent=CASE WHEN attempts+1>=? THEN ?"
            " ELSE sent END WHERE id=?",
            (MAX_ATTEMPTS, time.time(), notice_id),
        )

    # -- the web chat's keep -------------------------------------------------------------
    async def keep(self, channel: str, chat: str, text: str, event: str, size: int) -> None:
        """Keep one event of a chat's page, and only its newest ``size``."""
        now = time.time()
        async with self._db.transaction() as conn:
            await conn.execute(
                "INSERT INTO outbox(channel, chat, text, event, created, sent)"
                " VALUES (?,?,?,?,?,?)",
                (channel, chat, text, event, now, now),
            )
            await conn.execute(
                "DELETE FROM outbox WHERE channel=? AND chat=? AND event!='' AND id <="
                " (SELECT id FROM outbox WHERE channel=? AND chat=? AND event!=''"
                " ORDER BY id DESC LIMIT 1 OFFSET ?)",
                (channel, chat, channel, chat, size),
            )

    async def kept(self, channel: str) -> list[tuple[str, str]]:
        """(chat, event) of every kept event of ``channel``, oldest first."""
        rows = await self._db.conn.execute_fetchall(
            "SELECT chat, event FROM outbox WHERE channel=? AND event!='' ORDER BY id",
            (channel,),
        )
        return [(str(r[0]), str(r[1])) for r in rows]


class ChatKeep:
    """The web chat's keep over the durable outbox: what ``channels/web/outbox.py``'s
    ``Keep`` port asks for, in plain JSON (the store imports no channel)."""

    def __init__(self, outbox: SqliteOutbox, channel: str, size: int) -> None:
        self._outbox = outbox
        self._channel = channel
        self._size = size

    async def add(self, chat: str, event: dict[str, object]) -> None:
        text = str(event.get("text", ""))
        await self._outbox.keep(self._channel, chat, text, json.dumps(event), self._size)

    async def load(self) -> list[tuple[str, dict[str, object]]]:
        out: list[tuple[str, dict[str, object]]] = []
        for chat, raw in await self._outbox.kept(self._channel):
            try:
                event = json.loads(raw)
            except ValueError:
                continue  # a damaged row is not worth failing the page for
            if isinstance(event, dict):
                out.append((chat, event))
        return out
