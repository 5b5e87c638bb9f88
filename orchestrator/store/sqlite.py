"""SQLite store over aiosqlite: WAL, busy timeout, BEGIN IMMEDIATE writes, migrations.

One connection serves the process. aiosqlite serialises statements on its own
thread, but a *transaction* spans several awaits, so writers also take an asyncio
lock; BEGIN IMMEDIATE takes SQLite's write lock up front, so two processes on the
same file queue on the busy timeout instead of deadlocking on a lock upgrade.
"""

from __future__ import annotations

import asyncio
import json
import logging
import sqlite3
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiosqlite

from core.errors import StoreError
from core.events import SessionKey
from orchestrator.store.migrations import MIGRATIONS

BUSY_TIMEOUT_MS = 5000
FAST_BUSY_MS = 5  # the event-loop connection never waits longer than this


@dataclass(frozen=True, slots=True)
class SessionRow:
    key: SessionKey
    state: str
    data: dict[str, Any]


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
class TaskRow:
    id: int
    session: str
    repo: str
    prompt: str
    harness: str
    status: str


@dataclass(frozen=True, slots=True)
class CommitRow:
    id: int
    session: str
    repo: str
    sha: str
    parent: str
    task_id: int | None
    summary: str


def _key_str(key: SessionKey) -> str:
    return f"{key.channel}:{key.chat}"


class Store:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._db: aiosqlite.Connection | None = None
        self._write_lock = asyncio.Lock()
        # Conversation log rows are written behind the reply, in batches: each trip to
        # aiosqlite's thread costs ~0.1-0.2 ms, and a command must answer in under 1 ms.
        self._log_rows: list[tuple[Any, ...]] = []
        self._log_wake = asyncio.Event()
        self._log_task: asyncio.Task[None] | None = None
        self._totals: dict[str, list[int]] = {}  # session -> [in, out], once read
        self._fast: sqlite3.Connection | None = None

    # -- lifecycle -----------------------------------------------------------------
    async def __aenter__(self) -> Store:
        await self.open()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def open(self) -> None:
        if self._db is not None:
            raise StoreError("store already open")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            db = await aiosqlite.connect(self.path, isolation_level=None)
        except sqlite3.Error as err:
            raise StoreError(f"cannot open {self.path}: {err}") from err
        self._db = db
        try:
            await db.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
            await db.execute("PRAGMA journal_mode=WAL")
            # NORMAL is durable across process crashes in WAL mode; only an OS crash
            # can lose the last transactions, which is the usual trade for chat apps.
            await db.execute("PRAGMA synchronous=NORMAL")
            await db.execute("PRAGMA foreign_keys=ON")
            await self._migrate()
        except Exception:
            await self.close()
            raise
        self._log_task = asyncio.get_running_loop().create_task(
            self._log_writer(), name="store:message-log")
        # A second connection used on the event loop itself, only for the one durable
        # write every message waits for (the dedupe row): ~50 µs, where a trip to
        # aiosqlite's thread costs 0.1-1 ms under load. Its busy timeout is tiny, so it
        # can never stall the loop: when the file is busy the thread path is used.
        fast = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        fast.execute(f"PRAGMA busy_timeout={FAST_BUSY_MS}")
        fast.execute("PRAGMA synchronous=NORMAL")
        self._fast = fast

    async def close(self) -> None:
        if self._fast is not None:
            self._fast.close()
            self._fast = None
        if self._log_task is not None:
            self._log_task.cancel()
            with suppress(asyncio.CancelledError):
                await self._log_task
            self._log_task = None
            with suppress(Exception):  # the last rows still go in before the file closes
                await self.flush_log()
        if self._db is not None:
            db, self._db = self._db, None
            await db.close()

    @property
    def db(self) -> aiosqlite.Connection:
        if self._db is None:
            raise StoreError("store is not open")
        return self._db

    async def _migrate(self) -> None:
        async with self.db.execute("PRAGMA user_version") as cur:
            row = await cur.fetchone()
        version = int(row[0]) if row else 0
        if version > len(MIGRATIONS):
            raise StoreError(
                f"{self.path} has schema version {version}, newer than this Fetch "
                f"({len(MIGRATIONS)}); upgrade Fetch"
            )
        for number, script in enumerate(MIGRATIONS[version:], start=version + 1):
            async with self.transaction() as db:
                for statement in filter(str.strip, script.split(";")):
                    await db.execute(statement)
                await db.execute(f"PRAGMA user_version={number}")

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[aiosqlite.Connection]:
        async with self._write_lock:
            db = self.db
            try:
                await db.execute("BEGIN IMMEDIATE")
                yield db
            except BaseException:
                # Also when cancelled while BEGIN was in flight: the ROLLBACK is queued on
                # aiosqlite's thread after it, and shielded so it is sent regardless.
                with suppress(sqlite3.OperationalError, asyncio.CancelledError):
                    await asyncio.shield(db.execute("ROLLBACK"))
                raise
            else:
                await db.execute("COMMIT")

    async def _write(self, sql: str, params: tuple[Any, ...] = ()) -> aiosqlite.Cursor:
        """One statement is its own transaction (autocommit): a single write cannot
        deadlock, and skipping BEGIN/COMMIT saves two trips to aiosqlite's thread."""
        async with self._write_lock:
            return await self.db.execute(sql, params)

    async def write(self, sql: str, params: tuple[Any, ...] = ()) -> aiosqlite.Cursor:
        """One write statement in autocommit, under the write lock: for modules that own
        their tables (the scheduler) and need a single atomic change in one round trip."""
        return await self._write(sql, params)

    async def schema_version(self) -> int:
        async with self.db.execute("PRAGMA user_version") as cur:
            row = await cur.fetchone()
        return int(row[0]) if row else 0

    # -- inbound (dedupe + durable queue) --------------------------------------------
    async def accept_inbound(
        self, channel: str, message_id: str, key: SessionKey, payload: dict[str, Any]
    ) -> bool:
        """Record an inbound message; False if this (channel, id) was seen before."""
        sql = ("INSERT OR IGNORE INTO inbound(channel, message_id, session, payload, status,"
               " received) VALUES (?,?,?,?, 'queued', ?)")
        params = (channel, message_id, _key_str(key), json.dumps(payload), time.time())
        fast = self._write_now(sql, params)
        if fast is not None:
            return fast == 1
        cur = await self._write(sql, params)
        return cur.rowcount == 1

    def _write_now(self, sql: str, params: tuple[Any, ...]) -> int | None:
        """One statement on the loop's own connection; None when it must go the thread
        path (a transaction is open on the other connection, or the file is busy).
        Checking the lock and writing happen with no await between: atomic here."""
        if self._fast is None or self._write_lock.locked():
            return None
        try:
            return int(self._fast.execute(sql, params).rowcount)
        except sqlite3.OperationalError:
            return None

    async def finish_inbound(self, channel: str, message_id: str) -> None:
        sql = "UPDATE inbound SET status='done' WHERE channel=? AND message_id=?"
        if self._write_now(sql, (channel, message_id)) is None:
            await self._write(sql, (channel, message_id))

    async def queued_inbound(self) -> list[dict[str, Any]]:
        async with self.db.execute(
            "SELECT payload FROM inbound WHERE status='queued' ORDER BY received"
        ) as cur:
            return [json.loads(r[0]) for r in await cur.fetchall()]

    # -- sessions --------------------------------------------------------------------
    async def load_session(self, key: SessionKey) -> SessionRow | None:
        async with self.db.execute(
            "SELECT state, data FROM sessions WHERE key=?", (_key_str(key),)
        ) as cur:
            row = await cur.fetchone()
        if row is None:
            return None
        return SessionRow(key, str(row[0]), json.loads(row[1]))

    async def save_session(self, key: SessionKey, state: str, data: dict[str, Any]) -> None:
        await self._write(
            "INSERT INTO sessions(key, channel, chat, state, data, updated) VALUES"
            " (?,?,?,?,?,?) ON CONFLICT(key) DO UPDATE SET state=excluded.state,"
            " data=excluded.data, updated=excluded.updated",
            (_key_str(key), key.channel, key.chat, state, json.dumps(data), time.time()),
        )

    async def sessions_in(self, states: tuple[str, ...]) -> list[SessionRow]:
        marks = ",".join("?" * len(states))
        async with self.db.execute(
            f"SELECT channel, chat, state, data FROM sessions WHERE state IN ({marks})",
            states,
        ) as cur:
            rows = await cur.fetchall()
        return [SessionRow(SessionKey(r[0], r[1]), r[2], json.loads(r[3])) for r in rows]

    # -- messages --------------------------------------------------------------------
    async def add_message(
        self,
        key: SessionKey,
        direction: str,
        text: str,
        *,
        model: str | None = None,
        tokens_in: int = 0,
        tokens_out: int = 0,
    ) -> int:
        cur = await self._write(
            "INSERT INTO messages(session, direction, text, ts, model, tokens_in,"
            " tokens_out) VALUES (?,?,?,?,?,?,?)",
            (_key_str(key), direction, text, time.time(), model, tokens_in, tokens_out),
        )
        return int(cur.lastrowid or 0)

    def log_message(
        self, key: SessionKey, direction: str, text: str, *, model: str | None = None,
        tokens_in: int = 0, tokens_out: int = 0,
    ) -> None:
        """Queue a conversation log row; it is written shortly after, in a batch."""
        session = _key_str(key)
        self._log_rows.append(
            (session, direction, text, time.time(), model, tokens_in, tokens_out))
        totals = self._totals.get(session)
        if totals is not None:
            totals[0] += tokens_in
            totals[1] += tokens_out
        self._log_wake.set()

    async def flush_log(self) -> None:
        rows, self._log_rows = self._log_rows, []
        if not rows:
            return
        sql = ("INSERT INTO messages(session, direction, text, ts, model, tokens_in,"
               " tokens_out) VALUES (?,?,?,?,?,?,?)")
        if self._fast is not None and not self._write_lock.locked() and len(rows) <= 64:
            try:
                # A handful of rows: one implicit transaction on the loop's connection.
                self._fast.executemany(sql, rows)
                return
            except sqlite3.OperationalError:
                pass  # busy: the thread path below waits properly
        async with self._write_lock:
            await self.db.executemany(sql, rows)

    async def _log_writer(self) -> None:
        while True:
            await self._log_wake.wait()
            self._log_wake.clear()
            await asyncio.sleep(0.005)  # gather what arrives with the same message
            try:
                await self.flush_log()
            except sqlite3.Error:
                logging.getLogger(__name__).exception("message log write failed")

    async def token_totals(self, key: SessionKey) -> tuple[int, int]:
        """Tokens the orchestrator model used in this chat; read once, then kept current."""
        cached = self._totals.get(_key_str(key))
        if cached is not None:
            return cached[0], cached[1]
        await self.flush_log()
        rows = list(await self.db.execute_fetchall(
            "SELECT COALESCE(SUM(tokens_in),0), COALESCE(SUM(tokens_out),0) FROM messages"
            " WHERE session=? AND (tokens_in > 0 OR tokens_out > 0)",
            (_key_str(key),),
        ))
        totals = [int(rows[0][0]), int(rows[0][1])] if rows else [0, 0]
        self._totals.setdefault(_key_str(key), totals)
        return totals[0], totals[1]

    # -- tasks -----------------------------------------------------------------------
    async def create_task(self, key: SessionKey, repo: str, prompt: str, harness: str) -> int:
        cur = await self._write(
            "INSERT INTO tasks(session, repo, prompt, harness, status, created)"
            " VALUES (?,?,?,?, 'running', ?)",
            (_key_str(key), repo, prompt, harness, time.time()),
        )
        return int(cur.lastrowid or 0)

    async def finish_task(
        self,
        task_id: int,
        status: str,
        result: str = "",
        *,
        tokens_in: int = 0,
        tokens_out: int = 0,
        cost_usd: float = 0.0,
    ) -> None:
        await self._write(
            "UPDATE tasks SET status=?, result=?, finished=?, tokens_in=tokens_in+?,"
            " tokens_out=tokens_out+?, cost_usd=cost_usd+? WHERE id=?",
            (status, result, time.time(), tokens_in, tokens_out, cost_usd, task_id),
        )

    async def set_task_checks(self, task_id: int, checks: list[str]) -> None:
        await self._write("UPDATE tasks SET checks=? WHERE id=?", (json.dumps(checks), task_id))

    async def task_checks(self, task_id: int) -> list[str]:
        rows = list(await self.db.execute_fetchall(
            "SELECT checks FROM tasks WHERE id=?", (task_id,)))
        return [str(c) for c in json.loads(rows[0][0])] if rows else []

    async def set_task_status(self, task_id: int, status: str) -> None:
        await self._write("UPDATE tasks SET status=? WHERE id=?", (status, task_id))

    async def get_task(self, task_id: int) -> TaskRow | None:
        async with self.db.execute(
            "SELECT id, session, repo, prompt, harness, status FROM tasks WHERE id=?",
            (task_id,),
        ) as cur:
            r = await cur.fetchone()
        return TaskRow(int(r[0]), r[1], r[2], r[3], r[4], r[5]) if r else None

    # -- approvals -------------------------------------------------------------------
    async def create_approval(
        self,
        key: SessionKey,
        task_id: int,
        repo: str,
        nonce: str,
        diff_hash: str,
        base_sha: str,
        owner: str,
        ttl_seconds: float,
    ) -> int:
        now = time.time()
        async with self.transaction() as db:
            # Only one approval may be open per session: older ones can never be answered.
            await db.execute(
                "UPDATE approvals SET status='superseded', decided=? WHERE session=? AND"
                " status='pending'",
                (now, _key_str(key)),
            )
            cur = await db.execute(
                "INSERT INTO approvals(session, task_id, repo, nonce, diff_hash, base_sha,"
                " owner, status, created, expires_at) VALUES (?,?,?,?,?,?,?, 'pending', ?, ?)",
                (_key_str(key), task_id, repo, nonce, diff_hash, base_sha, owner, now,
                 now + ttl_seconds),
            )
            return int(cur.lastrowid or 0)

    async def get_approval(self, approval_id: int) -> ApprovalRow | None:
        async with self.db.execute(
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
        """Move a pending approval to ``status``; False if it was no longer pending."""
        cur = await self._write(
            "UPDATE approvals SET status=?, decided=? WHERE id=? AND status='pending'",
            (status, time.time(), approval_id),
        )
        return cur.rowcount == 1

    # -- commits (for /undo) -----------------------------------------------------------
    async def record_commit(
        self, key: SessionKey, repo: str, sha: str, parent: str, task_id: int | None,
        summary: str,
    ) -> None:
        await self._write(
            "INSERT INTO commits(session, repo, sha, parent, task_id, summary, created)"
            " VALUES (?,?,?,?,?,?,?)",
            (_key_str(key), repo, sha, parent, task_id, summary, time.time()),
        )

    async def last_commit(self, key: SessionKey) -> CommitRow | None:
        async with self.db.execute(
            "SELECT id, session, repo, sha, parent, task_id, summary FROM commits WHERE"
            " session=? AND undone_by IS NULL ORDER BY id DESC LIMIT 1",
            (_key_str(key),),
        ) as cur:
            r = await cur.fetchone()
        if r is None:
            return None
        return CommitRow(int(r[0]), r[1], r[2], r[3], r[4], r[5], r[6])

    async def mark_undone(self, commit_id: int, by_sha: str) -> None:
        await self._write("UPDATE commits SET undone_by=? WHERE id=?", (by_sha, commit_id))
