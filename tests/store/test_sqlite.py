"""The SQLite store: WAL, busy timeout, migrations, BEGIN IMMEDIATE under contention."""

from __future__ import annotations

import asyncio
import multiprocessing
import sqlite3
from pathlib import Path

import pytest

from core.errors import StoreError
from core.events import SessionKey
from orchestrator.store import Store
from orchestrator.store.db import Database
from orchestrator.store.messages import INSERT
from orchestrator.store.migrations import MIGRATIONS

KEY = SessionKey("terminal", "owner")


async def test_wal_and_schema_version(tmp_path: Path) -> None:
    async with Store(tmp_path / "f.db") as store:
        rows = await store.db.conn.execute_fetchall("PRAGMA journal_mode")
        assert next(iter(rows))[0] == "wal"
        assert await store.db.schema_version() == len(MIGRATIONS)
        rows = await store.db.conn.execute_fetchall("PRAGMA busy_timeout")
        assert next(iter(rows))[0] == 5000


async def test_reopen_does_not_remigrate(tmp_path: Path) -> None:
    async with Store(tmp_path / "f.db") as store:
        await store.messages.add(KEY, "in", "hello")
    async with Store(tmp_path / "f.db") as store:
        rows = await store.db.conn.execute_fetchall("SELECT text FROM messages")
        assert [r[0] for r in rows] == ["hello"]


async def test_newer_schema_is_refused(tmp_path: Path) -> None:
    db = sqlite3.connect(tmp_path / "f.db")
    db.execute(f"PRAGMA user_version={len(MIGRATIONS) + 5}")
    db.close()
    with pytest.raises(StoreError, match="newer than this Fetch"):
        async with Store(tmp_path / "f.db"):
            pass


async def test_dedupe_is_persistent(tmp_path: Path) -> None:
    async with Store(tmp_path / "f.db") as store:
        assert await store.inbox.accept("wa", "m1", KEY, {"x": 1})
        assert not await store.inbox.accept("wa", "m1", KEY, {"x": 1})
    async with Store(tmp_path / "f.db") as store:
        assert not await store.inbox.accept("wa", "m1", KEY, {"x": 1})
        assert await store.inbox.accept("tg", "m1", KEY, {"x": 1})
        assert [p["x"] for p in await store.inbox.queued()] == [1, 1]


async def test_failed_transaction_rolls_back(tmp_path: Path) -> None:
    async with Store(tmp_path / "f.db") as store:
        with pytest.raises(RuntimeError):
            async with store.db.transaction() as db:
                await db.execute(
                    "INSERT INTO messages(session, direction, text, ts) VALUES ('s','in','lost',0)"
                )
                raise RuntimeError("boom")
        rows = await store.db.conn.execute_fetchall("SELECT COUNT(*) FROM messages")
        assert next(iter(rows))[0] == 0
        await store.messages.add(KEY, "in", "still works")


async def test_cancelled_writer_leaves_no_open_transaction(tmp_path: Path) -> None:
    async with Store(tmp_path / "f.db") as store:
        tasks = [asyncio.create_task(store.messages.add(KEY, "in", f"m{i}")) for i in range(50)]
        await asyncio.sleep(0)
        for task in tasks[::3]:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await store.messages.add(KEY, "in", "after")  # would fail inside a dangling BEGIN
        assert isinstance(store.db, Database)
        assert not store.db.conn.in_transaction


def _writer(path: str, n: int) -> None:
    async def run() -> None:
        async with Store(Path(path)) as store:
            for i in range(n):
                await store.messages.add(KEY, "in", f"p{i}")

    asyncio.run(run())


def test_two_processes_write_without_deadlock(tmp_path: Path) -> None:
    path = str(tmp_path / "f.db")
    asyncio.run(_open_once(path))
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(path, 200)) for _ in range(3)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    db = sqlite3.connect(path)
    assert db.execute("SELECT COUNT(*) FROM messages").fetchone()[0] == 600
    db.close()


async def _open_once(path: str) -> None:
    async with Store(Path(path)):
        pass


def _count(path: Path, sql: str) -> int:
    db = sqlite3.connect(path)
    try:
        return int(db.execute(sql).fetchone()[0])
    finally:
        db.close()


async def test_logged_rows_are_written_behind_without_a_flush(tmp_path: Path) -> None:
    async with Store(tmp_path / "f.db") as store:
        for i in range(100):  # more than one event-loop batch holds
            store.messages.log(KEY, "in", f"m{i}")
        assert _count(tmp_path / "f.db", "SELECT COUNT(*) FROM messages") == 0
        for _ in range(100):
            await asyncio.sleep(0.01)
            if _count(tmp_path / "f.db", "SELECT COUNT(*) FROM messages") == 100:
                break
        assert _count(tmp_path / "f.db", "SELECT COUNT(*) FROM messages") == 100
        store.messages.log(KEY, "out", "the last one")
    # Closing writes what is still queued.
    assert _count(tmp_path / "f.db", "SELECT COUNT(*) FROM messages") == 101


async def test_fast_writes_wait_for_an_open_transaction(tmp_path: Path) -> None:
    async with Store(tmp_path / "f.db") as store:
        async with store.db.transaction() as conn:
            await conn.execute(
                "INSERT INTO messages(session, direction, text, ts) VALUES ('s','in','held',0)"
            )
            accept = asyncio.create_task(store.inbox.accept("wa", "m1", KEY, {"x": 1}))
            await asyncio.sleep(0.05)
            assert not accept.done()  # queued behind the transaction, not interleaved
        assert await accept
        assert not await store.inbox.accept("wa", "m1", KEY, {"x": 1})
        await store.inbox.finish("wa", "m1")
        assert await store.inbox.queued() == []


async def test_the_log_writer_lives_from_open_to_close(tmp_path: Path) -> None:
    """open starts the write-behind task, close ends it (asked, not cut mid-write) after
    the rows it had in hand, then writes the rest: nothing the store started is left."""
    before = asyncio.all_tasks()
    store = Store(tmp_path / "f.db")
    await store.open()
    writers = [t for t in asyncio.all_tasks() - before if t.get_name() == "store:message-log"]
    assert len(writers) == 1
    for i in range(10):
        store.messages.log(KEY, "in", f"m{i}")
    await asyncio.sleep(0)  # the writer is woken and now gathers the batch
    store.messages.log(KEY, "in", "queued while it gathers")
    await store.close()
    assert writers[0].done() and not writers[0].cancelled()
    assert [t for t in asyncio.all_tasks() - before if not t.done()] == []
    assert _count(tmp_path / "f.db", "SELECT COUNT(*) FROM messages") == 11


async def test_an_interrupted_flush_keeps_what_it_did_not_reach(tmp_path: Path) -> None:
    async with Store(tmp_path / "f.db") as store:
        db = store.db
        other = "INSERT INTO messages(session, direction, text, ts) VALUES (?, 'out', ?, 0)"
        async with db.transaction():  # the lock is held: the flush takes the thread path
            store.messages.log(KEY, "in", "first statement")
            db.write_behind(other, ("s", "second statement"))
            flush = asyncio.create_task(db.flush())
            await asyncio.sleep(0.05)
            flush.cancel()  # still waiting for the lock: neither batch was sent
            with pytest.raises(asyncio.CancelledError):
                await flush
        await db.flush()
        assert _count(tmp_path / "f.db", "SELECT COUNT(*) FROM messages") == 2


async def test_a_chats_recent_lines_are_read_on_the_loop_and_wait_for_an_open_transaction(
    tmp_path: Path,
) -> None:
    """``read_now`` reads on the loop's own connection (no thread woken per message);
    while a transaction is open on the other connection it answers None, so the read
    takes the thread path and sees that transaction's rows, as it always did."""
    key = SessionKey("terminal", "owner")
    async with Store(tmp_path / "fetch.db") as store:
        store.messages.log(key, "in", "first", sender="owner")
        store.messages.log(key, "out", "an answer")
        lines = await store.messages.recent_lines(key, 10)
        assert [(line.direction, line.text) for line in lines] == [
            ("in", "first"),
            ("out", "an answer"),
        ]
        sql = "SELECT text FROM messages ORDER BY id"
        assert store.db.read_now(sql, ()) == [("first",), ("an answer",)]
        opened, release = asyncio.Event(), asyncio.Event()

        async def hold() -> None:
            async with store.db.transaction() as conn:
                await conn.execute(
                    INSERT, ("terminal:owner", "in", "inside", 0.0, None, 0, 0, "owner")
                )
                opened.set()
                await release.wait()

        holder = asyncio.create_task(hold())
        await opened.wait()
        assert store.db.read_now(sql, ()) is None
        reader = asyncio.create_task(store.messages.recent_lines(key, 10))
        await asyncio.sleep(0.05)
        release.set()
        await holder
        assert [line.text for line in await reader] == ["first", "an answer", "inside"]


async def test_a_store_another_writer_holds_still_opens(tmp_path: Path) -> None:
    """Opening starts the WAL with a write (so the first message does not pay its
    fsyncs); when the file is busy (another writer holds it: a tool, a backup) that
    write is skipped and the store opens as it did before, its first message waiting
    for the lock like any other."""
    path = tmp_path / "fetch.db"
    async with Store(path):
        pass
    other = sqlite3.connect(path, isolation_level=None)
    try:
        other.execute("BEGIN IMMEDIATE")
        async with Store(path) as store:
            assert await store.db.schema_version() == len(MIGRATIONS)
        other.execute("ROLLBACK")
    finally:
        other.close()
