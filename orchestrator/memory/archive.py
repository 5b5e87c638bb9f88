"""Archival memory: old conversation turns become summarized, searchable chunks.

After every turn ``Archiver.observe`` may start (never await) one archiving task per
session. While a session's unarchived messages exceed ``archive_tokens``, its oldest
``archive_tokens / 2`` become a chunk: the transcript is written to
``FETCH_HOME/memory/archives/{thread}/chunks/{first}-{last}.json``, summarized, embedded,
and then — in ONE transaction — the chunk row is inserted and the watermark moved from
the value the plan started from to the chunk's last message (compare-and-swap).

Crash safety follows from that order: before the commit nothing is recorded, and the
next run plans the very same chunk (same watermark, same oldest messages) and overwrites
its file; after the commit the watermark excludes those messages. The unique index on
(thread, first message) and the compare-and-swap stop a duplicate even if two runs race.
Transcript files left by a run that died before its commit are swept after the next one.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import time
from collections.abc import Awaitable, Callable, Collection
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core.events import SessionKey
from orchestrator.memory.db import MemoryDB, write
from orchestrator.memory.items import put_vector
from orchestrator.memory.summarize import Summarizer, transcript
from orchestrator.supervisor import TaskSupervisor

log = logging.getLogger(__name__)
RETRY_AFTER = 60.0  # after a failure (endpoint down), leave a session alone this long
READ_LIMIT = 5000  # messages read per plan; a chunk is far smaller


def thread_of(key: SessionKey) -> str:
    return f"{key.channel}:{key.chat}"  # as the store writes messages.session


def tokens_of(text: str) -> int:
    return len(text) // 4 + 1  # ~4 characters a token: no tokenizer needed for a threshold


@dataclass(frozen=True, slots=True)
class ChunkPlan:
    thread: str
    after: int  # the watermark this plan starts from
    messages: list[dict[str, Any]]

    @property
    def first(self) -> int:
        return int(self.messages[0]["id"])

    @property
    def last(self) -> int:
        return int(self.messages[-1]["id"])

    @property
    def file_name(self) -> str:
        return f"{self.first:010d}-{self.last:010d}.json"


def watermark(conn: Any, thread: str) -> int:
    row = conn.execute(
        "SELECT last_msg FROM memory_watermarks WHERE thread=?", (thread,)
    ).fetchone()
    return int(row[0]) if row else 0


def plan_chunk(conn: Any, log_conn: Any, thread: str, threshold: int) -> ChunkPlan | None:
    after = watermark(conn, thread)
    (size,) = log_conn.execute(
        "SELECT COALESCE(SUM(LENGTH(text) / 4 + 1), 0) FROM messages WHERE session=? AND id>?",
        (thread, after),
    ).fetchone()
    if int(size) <= threshold:
        return None
    rows = log_conn.execute(
        "SELECT id, direction, text, ts FROM messages WHERE session=? AND id>? ORDER BY id LIMIT ?",
        (thread, after, READ_LIMIT),
    ).fetchall()
    budget, used = threshold // 2, 0
    chunk: list[dict[str, Any]] = []
    for r in rows:
        cost = tokens_of(str(r[2]))
        if chunk and used + cost > budget:
            break
        chunk.append(
            {"id": int(r[0]), "direction": str(r[1]), "text": str(r[2]), "ts": float(r[3])}
        )
        used += cost
    return ChunkPlan(thread, after, chunk) if chunk else None


def commit_chunk(
    conn: Any,
    plan: ChunkPlan,
    summary: str,
    path: str,
    vec: bytes | None,
    signature: str,
    vec_ok: bool,
) -> int | None:
    """Record the chunk and advance the watermark atomically; None if already done."""

    def run() -> int | None:
        if watermark(conn, plan.thread) != plan.after:
            return None  # another run archived these messages first
        now = time.time()
        cur = conn.execute(
            "INSERT INTO memory_items(kind, content, tags, source, thread, first_msg, last_msg,"
            " started, ended, path, created, updated) VALUES ('archive',?,?,'archive',?,?,?,?,?,"
            "?,?,?) ON CONFLICT DO NOTHING",
            (
                summary,
                "",
                plan.thread,
                plan.first,
                plan.last,
                plan.messages[0]["ts"],
                plan.messages[-1]["ts"],
                path,
                now,
                now,
            ),
        )
        if cur.rowcount != 1:
            return None
        chunk_id = int(cur.lastrowid)
        if vec is not None:
            put_vector(conn, chunk_id, "archive", vec, signature, vec_ok)
        conn.execute(
            "INSERT INTO memory_watermarks(thread, last_msg) VALUES (?, ?) ON CONFLICT"
            "(thread) DO UPDATE SET last_msg=excluded.last_msg",
            (plan.thread, plan.last),
        )
        return chunk_id

    result: int | None = write(conn, run)
    return result


def recorded_paths(conn: Any, thread: str) -> set[str]:
    rows = conn.execute(
        "SELECT path FROM memory_items WHERE kind='archive' AND thread=?", (thread,)
    ).fetchall()
    return {str(r[0]) for r in rows}


def write_atomic(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with tmp.open("wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


Embed = Callable[[str], Awaitable[tuple[bytes, str] | None]]


class Archiver:
    def __init__(
        self,
        db: MemoryDB,
        home: Path,
        threshold: int,
        summarizer: Summarizer,
        embed: Embed,
        supervisor: TaskSupervisor,
    ) -> None:
        self._db = db
        self._home = home
        self._threshold = threshold
        self._summarizer = summarizer
        self._embed = embed
        self._supervisor = supervisor
        self._running: set[SessionKey] = set()
        self._tasks: set[asyncio.Task[None]] = set()
        self._again: set[SessionKey] = set()
        self._retry_at: dict[SessionKey, float] = {}
        self.archived = 0
        self.last_error: str | None = None

    def folder(self, key: SessionKey) -> Path:
        return self._home / "memory" / "archives" / key.slug / "chunks"

    def busy(self) -> bool:
        return bool(self._running)

    def observe(self, key: SessionKey) -> None:
        """Start archiving ``key`` in the background; a run in progress runs once more."""
        if key in self._running:
            self._again.add(key)
            return
        if time.monotonic() < self._retry_at.get(key, 0.0):
            return
        self._running.add(key)
        try:
            task = self._supervisor.spawn(self._run(key), name=f"memory:archive:{key.slug}")
        except RuntimeError:  # shutting down: the next start picks it up
            self._running.discard(key)
            return
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def stop(self) -> None:
        """Cancel runs in flight; crash-safe by design, so nothing is half done."""
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task

    async def idle(self) -> None:
        """Wait until no archiving runs (tests, shutdown with grace)."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    async def _run(self, key: SessionKey) -> None:
        try:
            while True:
                self._again.discard(key)
                await self.archive(key)
                if key not in self._again:
                    return
        except asyncio.CancelledError:
            raise
        except Exception as err:  # logged only: archiving never reaches the owner
            self.last_error = f"{type(err).__name__}: {err}"[:200]
            self._retry_at[key] = time.monotonic() + RETRY_AFTER
            log.warning(
                "memory: archiving %s failed (retry in %.0f s): %s",
                key.slug,
                RETRY_AFTER,
                self.last_error,
            )
        finally:
            self._running.discard(key)

    async def archive(self, key: SessionKey) -> list[int]:
        """Archive every chunk due for ``key`` now; the new chunk ids."""
        thread, made = thread_of(key), []
        while True:
            plan = await self._db.run_with_log(plan_chunk, thread, self._threshold)
            if plan is None:
                break
            folder = self.folder(key)
            path = folder / plan.file_name
            body = {
                "thread": thread,
                "first": plan.first,
                "last": plan.last,
                "messages": plan.messages,
            }
            await asyncio.to_thread(
                write_atomic, path, json.dumps(body, ensure_ascii=False, indent=1).encode()
            )
            summary = await self._summarizer.summarize(plan.messages)
            embedded = await self._embed(summary)
            vec, signature = embedded if embedded else (None, "")
            rel = str(path.relative_to(self._home))
            chunk_id = await self._db.run(
                commit_chunk, plan, summary, rel, vec, signature, self._db.vec_ok
            )
            if chunk_id is not None:
                made.append(chunk_id)
                self.archived += 1
        if made:
            await self._sweep(key)
        return made

    async def _sweep(self, key: SessionKey) -> None:
        """Remove transcripts of chunks that were planned but never committed."""
        keep = await self._db.run(recorded_paths, thread_of(key))
        folder = self.folder(key)

        def sweep() -> None:
            for file in folder.glob("*.json"):
                if str(file.relative_to(self._home)) not in keep:
                    file.unlink(missing_ok=True)

        await asyncio.to_thread(sweep)


def summaries_before(conn: Any, thread: str, before: int, limit: int) -> list[tuple[int, int, str]]:
    """The newest ``limit`` chunk summaries of ``thread`` that end before message
    ``before``, oldest first: the orchestrator model sees them in place of old turns."""
    rows = conn.execute(
        "SELECT first_msg, last_msg, content FROM memory_items WHERE"
        " kind='archive' AND thread=? AND last_msg<? ORDER BY last_msg DESC"
        " LIMIT ?",
        (thread, before, limit),
    ).fetchall()
    return [(int(r[0]), int(r[1]), str(r[2])) for r in reversed(rows)]


def read_transcript(
    conn: Any, log_conn: Any, home: Path, chunk_id: int, threads: Collection[str] | None = None
) -> str | None:
    """A chunk's full transcript: its JSON file, or the message log if the file is gone.
    ``threads`` given: only a chunk of one of them (another's reads as absent)."""
    row = conn.execute(
        "SELECT thread, first_msg, last_msg, path FROM memory_items WHERE id=? AND kind='archive'",
        (chunk_id,),
    ).fetchone()
    if row is None or (threads is not None and row[0] not in threads):
        return None
    thread, first, last, rel = row
    try:
        body = json.loads((home / str(rel)).read_text(encoding="utf-8"))
        messages = list(body["messages"])
    except (OSError, ValueError, KeyError, TypeError):
        rows = log_conn.execute(
            "SELECT id, direction, text, ts FROM messages WHERE session=?"
            " AND id BETWEEN ? AND ? ORDER BY id",
            (thread, first, last),
        ).fetchall()
        messages = [{"id": r[0], "direction": r[1], "text": r[2], "ts": r[3]} for r in rows]
    return f"Archive chunk #{chunk_id} ({thread}, messages {first}-{last}):\n" + transcript(
        messages
    )
