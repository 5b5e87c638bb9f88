"""The improvements table (migration 10): one row per /improve run, what it proposed and
what became of the pull request. ``/prs`` reads it and writes back GitHub's word on each
pull request, so the outcome (merged, closed) is remembered after the fact."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from core.events import SessionKey
from orchestrator.store.db import key_str
from orchestrator.store.engine import Engine

COLUMNS = (
    "id, session, requester, request, repo, base, branch, head_sha, status, tests, detail,"
    " pr_number, pr_url, pr_state, created, updated"
)


@dataclass(frozen=True, slots=True)
class Improvement:
    id: int
    session: str
    requester: str
    request: str
    repo: str
    base: str
    branch: str
    head_sha: str
    status: str  # running | proposed | empty | failed | stopped | interrupted
    tests: str
    detail: str
    pr_number: int | None
    pr_url: str
    pr_state: str  # open | closed | merged, as GitHub last said; '' before a PR
    created: float
    updated: float


class SqliteImprovements:
    def __init__(self, db: Engine) -> None:
        self._db = db

    async def create(self, key: SessionKey, requester: str, request: str, repo: str) -> int:
        now = time.time()
        # An effect: the /improve message is closed with the run's row (store/once.py),
        # so a restart marks the run cut short instead of starting a second one.
        cur = await self._db.write_effect(
            "INSERT INTO improvements(session, requester, request, repo, status, created,"
            " updated) VALUES (?,?,?,?, 'running', ?, ?)",
            (key_str(key), requester, request, repo, now, now),
        )
        assert cur.lastrowid is not None
        return int(cur.lastrowid)

    async def update(self, run_id: int, **fields: Any) -> None:
        allowed = {"base", "branch", "head_sha", "status", "tests", "detail"}
        allowed |= {"pr_number", "pr_url", "pr_state"}
        unknown = set(fields) - allowed
        if unknown:
            raise ValueError(f"not a column of improvements: {sorted(unknown)}")
        names = sorted(fields)
        sets = ", ".join(f"{n}=?" for n in names)
        await self._db.write(
            f"UPDATE improvements SET {sets}, updated=? WHERE id=?",
            (*(fields[n] for n in names), time.time(), run_id),
        )

    async def get(self, run_id: int) -> Improvement | None:
        rows = await self._db.conn.execute_fetchall(
            f"SELECT {COLUMNS} FROM improvements WHERE id=?", (run_id,)
        )
        return Improvement(*next(iter(rows))) if rows else None

    async def recent(self, limit: int = 20) -> list[Improvement]:
        rows = await self._db.conn.execute_fetchall(
            f"SELECT {COLUMNS} FROM improvements ORDER BY id DESC LIMIT ?", (limit,)
        )
        return [Improvement(*row) for row in rows]

    async def interrupt_running(self) -> list[Improvement]:
        """At start: runs a restart cut short (their checkouts are gone with them)."""
        rows = await self._db.conn.execute_fetchall(
            f"SELECT {COLUMNS} FROM improvements WHERE status='running'"
        )
        found = [Improvement(*row) for row in rows]
        if found:
            await self._db.write(
                "UPDATE improvements SET status='interrupted', detail='Fetch restarted',"
                " updated=? WHERE status='running'",
                (time.time(),),
            )
        return found


__all__ = ["Improvement", "SqliteImprovements"]
