"""Grants: the owner's yes, kept. ``once`` (one use), ``session`` (this chat, until
/clear) or ``persisted`` (until revoked). Rows live in ``grants`` (fetch.db, migration 5)
and in memory, so the many sync questions (/help, the tool list) cost no query."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Literal

from core.events import SessionKey
from orchestrator.store.db import key_str
from orchestrator.store.engine import Engine

Scope = Literal["once", "session", "persisted"]
SCOPES: tuple[Scope, ...] = ("once", "session", "persisted")


@dataclass(frozen=True, slots=True)
class Grant:
    id: int
    subject: str
    action: str  # a pattern, like a rule's ``what``
    scope: Scope
    session: str | None  # "channel:chat" for once/session grants
    granted_by: str
    created: float

    def covers(self, subject: str, action: str, key: SessionKey | None) -> bool:
        from orchestrator.permissions.model import matches

        if self.subject != subject or not matches(self.action, action):
            return False
        return self.scope == "persisted" or (key is not None and self.session == key_str(key))

    def describe(self) -> str:
        where = "" if self.session is None else f" in {self.session}"
        return f"#{self.id} {self.subject}: {self.action} ({self.scope}{where})"


class GrantStore:
    def __init__(self, db: Engine) -> None:
        self._db = db
        self._live: dict[int, Grant] = {}

    async def load(self) -> None:
        rows = await self._db.conn.execute_fetchall(
            "SELECT id, subject, action, scope, session, granted_by, created FROM grants"
            " WHERE revoked IS NULL"
        )
        self._live = {
            int(r[0]): Grant(int(r[0]), r[1], r[2], r[3], r[4], r[5], float(r[6])) for r in rows
        }

    def active(self) -> list[Grant]:
        return sorted(self._live.values(), key=lambda g: g.id)

    def find(
        self, subject: str, action: str, key: SessionKey | None, scopes: tuple[Scope, ...]
    ) -> Grant | None:
        for grant in self.active():
            if grant.scope in scopes and grant.covers(subject, action, key):
                return grant
        return None

    async def add(
        self,
        subject: str,
        action: str,
        scope: Scope,
        key: SessionKey | None,
        granted_by: str,
        answers: str | None = None,
    ) -> Grant:
        """A new grant; ``answers``: the nonce of the ask it answers, deleted in the same
        transaction (a kill between could otherwise lose the grant or ask twice). An
        effect: the /grants message is closed with it (store/once.py)."""
        session = None if scope == "persisted" or key is None else key_str(key)
        now = time.time()
        async with self._db.effect() as conn:
            cur = await conn.execute(
                "INSERT INTO grants(subject, action, scope, session, granted_by, created)"
                " VALUES (?,?,?,?,?,?)",
                (subject, action, scope, session, granted_by, now),
            )
            if answers is not None:
                await conn.execute("DELETE FROM asks WHERE nonce=?", (answers,))
        grant = Grant(int(cur.lastrowid or 0), subject, action, scope, session, granted_by, now)
        self._live[grant.id] = grant
        return grant

    async def revoke(self, grant_id: int) -> Grant | None:
        grant = self._live.pop(grant_id, None)
        if grant is not None:
            await self._db.write("UPDATE grants SET revoked=? WHERE id=?", (time.time(), grant_id))
        return grant

    async def end_session(self, key: SessionKey) -> int:
        """/clear: this chat's session and once grants end."""
        ended = [g.id for g in self._live.values() if g.session == key_str(key)]
        for grant_id in ended:
            await self.revoke(grant_id)
        return len(ended)
