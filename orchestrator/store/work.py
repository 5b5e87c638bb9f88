"""The work a chat asked for: ``tasks`` (harness runs), ``approvals`` (the diff the
owner must answer) and ``commits`` (what ``/undo`` reverts)."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Protocol

from core.events import SessionKey
from orchestrator.store.db import Database, key_str


@dataclass(frozen=True, slots=True)
class TaskRow:
    id: int
    session: str
    repo: str
    prompt: str
    harness: str
    status: str
    requester: str = "owner"  # who the task is for (orchestrator/permissions/)


@dataclass(frozen=True, slots=True)
class ApprovalRow:
    id: int
    session: str
    task_id: int
    repo: str
    nonce: str
    diff_hash: str
    base_sha: str
    owner: str
    status: str
    expires_at: float


@dataclass(frozen=True, slots=True)
class CommitRow:
    id: int
    session: str
    repo: str
    sha: str
    parent: str
    task_id: int | None
    summary: str
    requester: str = "owner"  # whose task it was: /undo reverts only one's own


class WorkPort(Protocol):
    # -- tasks -----------------------------------------------------------------------
    async def create_task(self, key: SessionKey, repo: str, prompt: str,
                          harness: str, requester: str = "owner") -> int:
        """A new task, status ``running``; returns its id."""

    async def finish_task(self, task_id: int, status: str, result: str = "", *,
                          tokens_in: int = 0, tokens_out: int = 0,
                          cost_usd: float = 0.0) -> None:
        """Set the final status and result; token and cost figures add up."""

    async def set_task_checks(self, task_id: int, checks: list[str]) -> None: ...

    async def task_checks(self, task_id: int) -> list[str]:
        """The test commands the harness ran ([] for an unknown task)."""

    async def set_task_status(self, task_id: int, status: str) -> None: ...

    async def get_task(self, task_id: int) -> TaskRow | None: ...

    # -- approvals -------------------------------------------------------------------
    async def create_approval(self, key: SessionKey, task_id: int, repo: str, nonce: str,
                              diff_hash: str, base_sha: str, owner: str,
                              ttl_seconds: float) -> int:
        """A pending approval; the session's older pending one is superseded."""

    async def get_approval(self, approval_id: int) -> ApprovalRow | None: ...

    async def decide_approval(self, approval_id: int, status: str) -> bool:
        """Move a pending approval to ``status``; False if it was no longer pending."""

    # -- commits (for /undo) ---------------------------------------------------------
    async def record_commit(self, key: SessionKey, repo: str, sha: str, parent: str,
                            task_id: int | None, summary: str,
                            requester: str = "owner") -> None: ...

    async def last_commit(self, key: SessionKey) -> CommitRow | None:
        """The session's newest commit not yet undone."""

    async def mark_undone(self, commit_id: int, by_sha: str) -> None: ...


class SqliteWork:
    def __init__(self, db: Database) -> None:
        self._db = db

    # -- tasks -----------------------------------------------------------------------
    async def create_task(self, key: SessionKey, repo: str, prompt: str,
                          harness: str, requester: str = "owner") -> int:
        cur = await self._db.write(
            "INSERT INTO tasks(session, repo, prompt, harness, status, created, requester)"
            " VALUES (?,?,?,?, 'running', ?, ?)",
            (key_str(key), repo, prompt, harness, time.time(), requester),
        )
        return int(cur.lastrowid or 0)

    async def finish_task(self, task_id: int, status: str, result: str = "", *,
                          tokens_in: int = 0, tokens_out: int = 0,
                          cost_usd: float = 0.0) -> None:
        await self._db.write(
            "UPDATE tasks SET status=?, result=?, finished=?, tokens_in=tokens_in+?,"
            " tokens_out=tokens_out+?, cost_usd=cost_usd+? WHERE id=?",
            (status, result, time.time(), tokens_in, tokens_out, cost_usd, task_id),
        )

    async def set_task_checks(self, task_id: int, checks: list[str]) -> None:
        await self._db.write("UPDATE tasks SET checks=? WHERE id=?",
                             (json.dumps(checks), task_id))

    async def task_checks(self, task_id: int) -> list[str]:
        rows = list(await self._db.conn.execute_fetchall(
            "SELECT checks FROM tasks WHERE id=?", (task_id,)))
        return [str(c) for c in json.loads(rows[0][0])] if rows else []

    async def set_task_status(self, task_id: int, status: str) -> None:
        await self._db.write("UPDATE tasks SET status=? WHERE id=?", (status, task_id))

    async def get_task(self, task_id: int) -> TaskRow | None:
        async with self._db.conn.execute(
            "SELECT id, session, repo, prompt, harness, status, requester FROM tasks"
            " WHERE id=?", (task_id,),
        ) as cur:
            r = await cur.fetchone()
        return TaskRow(int(r[0]), r[1], r[2], r[3], r[4], r[5], r[6]) if r else None

    # -- approvals -------------------------------------------------------------------
    async def create_approval(self, key: SessionKey, task_id: int, repo: str, nonce: str,
                              diff_hash: str, base_sha: str, owner: str,
                              ttl_seconds: float) -> int:
        now = time.time()
        async with self._db.transaction() as conn:
            # Only one approval may be open per session: older ones can never be answered.
            await conn.execute(
                "UPDATE approvals SET status='superseded', decided=? WHERE session=? AND"
                " status='pending'",
                (now, key_str(key)),
            )
            cur = await conn.execute(
                "INSERT INTO approvals(session, task_id, repo, nonce, diff_hash, base_sha,"
                " owner, status, created, expires_at) VALUES (?,?,?,?,?,?,?, 'pending', ?, ?)",
                (key_str(key), task_id, repo, nonce, diff_hash, base_sha, owner, now,
                 now + ttl_seconds),
            )
            return int(cur.lastrowid or 0)

    async def get_approval(self, approval_id: int) -> ApprovalRow | None:
        async with self._db.conn.execute(
            "SELECT id, session, task_id, repo, nonce, diff_hash, base_sha, owner, status,"
            " expires_at FROM approvals WHERE id=?",
            (approval_id,),
        ) as cur:
            r = await cur.fetchone()
        if r is None:
            return None
        return ApprovalRow(
            int(r[0]), r[1], int(r[2]), r[3], r[4], r[5], r[6], r[7], r[8], float(r[9])
        )

    async def decide_approval(self, approval_id: int, status: str) -> bool:
        cur = await self._db.write(
            "UPDATE approvals SET status=?, decided=? WHERE id=? AND status='pending'",
            (status, time.time(), approval_id),
        )
        return cur.rowcount == 1

    # -- commits (for /undo) ---------------------------------------------------------
    async def record_commit(self, key: SessionKey, repo: str, sha: str, parent: str,
                            task_id: int | None, summary: str,
                            requester: str = "owner") -> None:
        await self._db.write(
            "INSERT INTO commits(session, repo, sha, parent, task_id, summary, created,"
            " requester) VALUES (?,?,?,?,?,?,?,?)",
            (key_str(key), repo, sha, parent, task_id, summary, time.time(), requester),
        )

    async def last_commit(self, key: SessionKey) -> CommitRow | None:
        async with self._db.conn.execute(
            "SELECT id, session, repo, sha, parent, task_id, summary, requester FROM commits"
            " WHERE session=? AND undone_by IS NULL ORDER BY id DESC LIMIT 1",
            (key_str(key),),
        ) as cur:
            r = await cur.fetchone()
        if r is None:
            return None
        return CommitRow(int(r[0]), r[1], r[2], r[3], r[4], r[5], r[6], r[7])

    async def mark_undone(self, commit_id: int, by_sha: str) -> None:
        await self._db.write("UPDATE commits SET undone_by=? WHERE id=?", (by_sha, commit_id))
