"""The dashboard's reads of ``fetch.db``: typed rows, paged, never a scan per request.

Read-only SQL over the store's connection (``Database.conn``). Lists are paged by
fetching one row more than shown (no ``COUNT(*)`` of a whole table per request); the
sums of money come from the usage ledger's own port (``store.usage``), the calls of one
task from here (the ledger has no per-task listing).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from orchestrator.store import sql
from orchestrator.store.engine import Engine

PAGE = 50
T = TypeVar("T")
FAILED_TASKS = ("failed", "interrupted", "stopped", "expired")


@dataclass(frozen=True, slots=True)
class SessionItem:
    key: str
    channel: str
    chat: str
    state: str
    updated: float
    messages: int


@dataclass(frozen=True, slots=True)
class MessageItem:
    id: int
    direction: str
    text: str
    ts: float
    model: str | None
    tokens_in: int
    tokens_out: int


@dataclass(frozen=True, slots=True)
class TaskItem:
    id: int
    session: str
    repo: str
    prompt: str
    harness: str
    status: str
    created: float
    finished: float | None
    result: str
    cost: float
    checks: tuple[str, ...]
    requester: str


@dataclass(frozen=True, slots=True)
class CallItem:
    id: int
    at: float
    source: str
    provider: str
    model: str
    tokens_in: int
    tokens_out: int
    cost: float
    latency_ms: float
    status: int
    error: str
    session: str
    task: int | None


@dataclass(frozen=True, slots=True)
class Paged(Generic[T]):
    rows: list[T]
    more: bool  # another page follows


def _page(rows: list[T], limit: int) -> Paged[T]:
    return Paged(rows[:limit], len(rows) > limit)


def like(text: str) -> str:
    """A LIKE pattern matching ``text`` literally (``%`` and ``_`` escaped with ``\\``)."""
    escaped = text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


_SESSION_COLS = (
    "s.key, s.channel, s.chat, s.state, s.updated,"
    " (SELECT COUNT(*) FROM messages m WHERE m.session = s.key)"
)
_TASK_COLS = (
    "id, session, repo, prompt, harness, status, created, finished, COALESCE(result, ''),"
    " cost_usd + COALESCE((SELECT SUM(u.cost) FROM usage u WHERE u.task = tasks.id), 0),"
    " checks, requester"
)
_CALL_COLS = (
    "id, at, source, provider, model, tokens_in, tokens_out, cost, latency_ms, status,"
    " error, session, task"
)


def _session(r: Any) -> SessionItem:
    return SessionItem(r[0], r[1], r[2], r[3], float(r[4]), int(r[5]))


def _checks(raw: str | None) -> tuple[str, ...]:
    try:
        value = json.loads(raw or "[]")
    except ValueError:
        return ()
    return tuple(str(c) for c in value) if isinstance(value, list) else ()


def _task(r: Any) -> TaskItem:
    return TaskItem(
        int(r[0]),
        r[1],
        r[2],
        r[3],
        r[4],
        r[5],
        float(r[6]),
        None if r[7] is None else float(r[7]),
        r[8],
        float(r[9] or 0.0),
        _checks(r[10]),
        r[11],
    )


def _call(r: Any) -> CallItem:
    return CallItem(
        int(r[0]),
        float(r[1]),
        r[2],
        r[3],
        r[4],
        int(r[5]),
        int(r[6]),
        float(r[7]),
        float(r[8]),
        int(r[9]),
        r[10],
        r[11],
        None if r[12] is None else int(r[12]),
    )


class DashboardQueries:
    def __init__(self, db: Engine) -> None:
        self._db = db
        self._like = sql.like(db.dialect)  # case-insensitive on both engines

    async def _rows(self, sql: str, params: tuple[Any, ...] = ()) -> list[Any]:
        return list(await self._db.conn.execute_fetchall(sql, params))

    # -- sessions ------------------------------------------------------------------
    async def sessions(
        self, query: str = "", offset: int = 0, limit: int = PAGE
    ) -> Paged[SessionItem]:
        """Newest activity first. ``query``: the key, or any message's text, contains it."""
        if not query:
            rows = await self._rows(
                f"SELECT {_SESSION_COLS} FROM sessions s ORDER BY s.updated DESC, s.key"
                " LIMIT ? OFFSET ?",
                (limit + 1, offset),
            )
        else:
            pattern = like(query)
            rows = await self._rows(
                f"SELECT {_SESSION_COLS} FROM sessions s WHERE s.key {self._like} ? ESCAPE '\\'"
                " OR s.key IN (SELECT m.session FROM messages m WHERE"
                f" m.text {self._like} ? ESCAPE '\\')"
                " ORDER BY s.updated DESC, s.key LIMIT ? OFFSET ?",
                (pattern, pattern, limit + 1, offset),
            )
        return _page([_session(r) for r in rows], limit)

    async def session(self, key: str) -> SessionItem | None:
        rows = await self._rows(f"SELECT {_SESSION_COLS} FROM sessions s WHERE s.key = ?", (key,))
        return _session(rows[0]) if rows else None

    async def messages(
        self, key: str, before: int | None = None, limit: int = 200
    ) -> Paged[MessageItem]:
        """The chat's messages, oldest first, the last ``limit`` before message ``before``."""
        bound = "" if before is None else " AND id < ?"
        params: tuple[Any, ...] = (key,) if before is None else (key, before)
        rows = await self._rows(
            "SELECT id, direction, text, ts, model, tokens_in, tokens_out FROM messages"
            f" WHERE session = ?{bound} ORDER BY id DESC LIMIT ?",
            (*params, limit + 1),
        )
        page = _page(
            [
                MessageItem(int(r[0]), r[1], r[2], float(r[3]), r[4], int(r[5]), int(r[6]))
                for r in rows
            ],
            limit,
        )
        return Paged(list(reversed(page.rows)), page.more)

    async def session_tasks(self, key: str, limit: int = 20) -> list[TaskItem]:
        rows = await self._rows(
            f"SELECT {_TASK_COLS} FROM tasks WHERE session = ? ORDER BY id DESC LIMIT ?",
            (key, limit),
        )
        return [_task(r) for r in rows]

    # -- tasks ---------------------------------------------------------------------
    async def tasks(
        self, query: str = "", status: str = "", offset: int = 0, limit: int = PAGE
    ) -> Paged[TaskItem]:
        where, params = [], []
        if query:
            where.append(f"(prompt {self._like} ? ESCAPE '\\' OR repo {self._like} ? ESCAPE '\\')")
            params += [like(query), like(query)]
        if status:
            where.append("status = ?")
            params.append(status)
        clause = f" WHERE {' AND '.join(where)}" if where else ""
        rows = await self._rows(
            f"SELECT {_TASK_COLS} FROM tasks{clause} ORDER BY id DESC LIMIT ? OFFSET ?",
            (*params, limit + 1, offset),
        )
        return _page([_task(r) for r in rows], limit)

    async def task(self, task_id: int) -> TaskItem | None:
        rows = await self._rows(f"SELECT {_TASK_COLS} FROM tasks WHERE id = ?", (task_id,))
        return _task(rows[0]) if rows else None

    async def task_commit(self, task_id: int) -> tuple[str, str] | None:
        """(repo, sha) of the commit the task became, if it did."""
        rows = await self._rows(
            "SELECT repo, sha FROM commits WHERE task_id = ? ORDER BY id DESC LIMIT 1", (task_id,)
        )
        return (rows[0][0], rows[0][1]) if rows else None

    async def task_approval(self, task_id: int) -> tuple[str, float, str, str] | None:
        """(status, expires_at, base commit, tree) of the task's latest approval: the
        diff it waits on is read from git objects (tree "" for a row from before)."""
        rows = await self._rows(
            "SELECT status, expires_at, base_sha, tree_sha FROM approvals WHERE task_id = ?"
            " ORDER BY id DESC LIMIT 1",
            (task_id,),
        )
        return (rows[0][0], float(rows[0][1]), rows[0][2], rows[0][3]) if rows else None

    async def task_calls(
        self, task_id: int, before: int | None = None, limit: int = 200
    ) -> Paged[CallItem]:
        """The model calls a task paid for (the relay's, mostly), newest first."""
        bound = "" if before is None else " AND id < ?"
        params: tuple[Any, ...] = (task_id,) if before is None else (task_id, before)
        rows = await self._rows(
            f"SELECT {_CALL_COLS} FROM usage WHERE task = ?{bound} ORDER BY id DESC LIMIT ?",
            (*params, limit + 1),
        )
        return _page([_call(r) for r in rows], limit)

    async def task_call_sums(self, task_id: int) -> tuple[int, int, int, float, float]:
        """calls, tokens in, tokens out, cost, mean latency of one task."""
        rows = await self._rows(
            "SELECT COUNT(*), COALESCE(SUM(tokens_in), 0), COALESCE(SUM(tokens_out), 0),"
            " COALESCE(SUM(cost), 0), COALESCE(AVG(latency_ms), 0) FROM usage WHERE task = ?",
            (task_id,),
        )
        r = rows[0]
        return int(r[0]), int(r[1]), int(r[2]), float(r[3]), float(r[4])

    async def pending_approval(self, task_id: int) -> tuple[str, str] | None:
        """(nonce, chat) of the approval the task's diff waits on: the page's buttons
        are bound to it, and its chat is where the answer goes (a member's diff waits
        in the owner's chat)."""
        rows = await self._rows(
            "SELECT nonce, session FROM approvals WHERE task_id = ? AND status = 'pending'"
            " ORDER BY id DESC LIMIT 1",
            (task_id,),
        )
        return (rows[0][0], rows[0][1]) if rows else None

    # -- what a live page follows (orchestrator/dashboard/live.py) -------------------
    async def task_fingerprint(self, task_id: int) -> tuple[Any, ...]:
        rows = await self._rows(
            "SELECT status, finished, length(COALESCE(result, '')), checks,"
            " (SELECT MAX(id) FROM usage WHERE task = ?),"
            " (SELECT id || status FROM approvals WHERE task_id = ? ORDER BY id DESC LIMIT 1),"
            " (SELECT sha FROM commits WHERE task_id = ? ORDER BY id DESC LIMIT 1)"
            " FROM tasks WHERE id = ?",
            (task_id, task_id, task_id, task_id),
        )
        return tuple(rows[0]) if rows else ()

    async def session_fingerprint(self, key: str) -> tuple[Any, ...]:
        rows = await self._rows(
            "SELECT state, updated, (SELECT MAX(id) FROM messages WHERE session = ?),"
            " (SELECT MAX(id) FROM tasks WHERE session = ?),"
            f" (SELECT {sql.joined('status', self._db.dialect)} FROM tasks WHERE session = ?"
            " AND id >="
            " (SELECT COALESCE(MAX(id), 0) - 20 FROM tasks WHERE session = ?))"
            " FROM sessions WHERE key = ?",
            (key, key, key, key, key),
        )
        return tuple(rows[0]) if rows else ()

    async def snippets(self, keys: list[str], query: str) -> dict[str, str]:
        """Per chat, the newest message whose text contains ``query`` (the search's
        match, for a snippet); chats that matched by their key only are left out."""
        found: dict[str, str] = {}
        pattern = like(query)
        for key in keys:
            rows = await self._rows(
                f"SELECT text FROM messages WHERE session = ? AND text {self._like} ?"
                " ESCAPE '\\'"
                " ORDER BY id DESC LIMIT 1",
                (key, pattern),
            )
            if rows:
                found[key] = rows[0][0]
        return found

    # -- errors --------------------------------------------------------------------
    async def failed_tasks(self, limit: int = PAGE) -> list[TaskItem]:
        marks = ",".join("?" * len(FAILED_TASKS))
        rows = await self._rows(
            f"SELECT {_TASK_COLS} FROM tasks WHERE status IN ({marks}) ORDER BY id DESC LIMIT ?",
            (*FAILED_TASKS, limit),
        )
        return [_task(r) for r in rows]

    async def failed_calls(self, before: int | None = None, limit: int = PAGE) -> Paged[CallItem]:
        bound = "" if before is None else " AND id < ?"
        rows = await self._rows(
            f"SELECT {_CALL_COLS} FROM usage WHERE (status != 200 OR error != ''){bound}"
            " ORDER BY id DESC LIMIT ?",
            (() if before is None else (before,)) + (limit + 1,),
        )
        return _page([_call(r) for r in rows], limit)

    async def failed_runs(self, limit: int = PAGE) -> list[tuple[int, str, float, str, str]]:
        """(job id, job text, slot, status, error) of runs that failed, missed or were cut."""
        rows = await self._rows(
            "SELECT r.job_id, j.text, r.slot, r.status, COALESCE(r.error, '') FROM job_runs r"
            " JOIN jobs j ON j.id = r.job_id WHERE r.status IN ('failed', 'missed', 'interrupted')"
            " ORDER BY r.id DESC LIMIT ?",
            (limit,),
        )
        return [(int(r[0]), r[1], float(r[2]), r[3], r[4]) for r in rows]

    # -- health --------------------------------------------------------------------
    async def calls_since(self, since: float, source: str) -> tuple[int, int, float]:
        """(calls, failed calls, mean latency ms) of one source since ``since``."""
        rows = await self._rows(
            "SELECT COUNT(*),"
            " COALESCE(SUM(CASE WHEN status != 200 OR error != '' THEN 1 ELSE 0 END), 0),"
            " COALESCE(AVG(latency_ms), 0) FROM usage WHERE at >= ? AND source = ?",
            (since, source),
        )
        r = rows[0]
        return int(r[0]), int(r[1]), float(r[2])


__all__ = [
    "PAGE",
    "CallItem",
    "DashboardQueries",
    "MessageItem",
    "Paged",
    "SessionItem",
    "TaskItem",
    "like",
]
