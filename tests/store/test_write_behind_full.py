"""The message log's writer while the file cannot grow: SQLite's own "database or disk is
full" (``PRAGMA max_page_count`` pinned to the file's size on both connections), not a
mock. The writer backs off instead of spinning, says so once, keeps the rows (up to a
cap) and writes them when space returns."""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from core.events import SessionKey
from orchestrator.store import Store
from orchestrator.store.db import Database

KEY = SessionKey("terminal", "owner")


async def _limit_pages(db: Database, pages: int) -> None:
    assert db._fast is not None
    db._fast.execute(f"PRAGMA max_page_count={pages}")
    await db.conn.execute(f"PRAGMA max_page_count={pages}")


async def _fill(db: Database) -> None:
    """Pin the file at its size, then use up the free room left in its last pages."""
    rows = await db.conn.execute_fetchall("PRAGMA page_count")
    await _limit_pages(db, int(next(iter(rows))[0]))
    for size in (500, 50, 1):  # big rows, then the gaps they leave
        with pytest.raises(sqlite3.OperationalError, match="full"):
            for _ in range(10_000):
                await db.conn.execute(
                    "INSERT INTO messages(session, direction, text, ts)"
                    " VALUES ('filler', 'in', ?, 0)",
                    ("x" * size,),
                )


def _texts(path: Path) -> list[str]:
    with sqlite3.connect(path) as db:
        rows = db.execute("SELECT text FROM messages WHERE session != 'filler' ORDER BY id")
        return [str(r[0]) for r in rows]


async def _until(done: Callable[[], bool], seconds: float) -> None:
    for _ in range(int(seconds / 0.01)):
        if done():
            return
        await asyncio.sleep(0.01)
    assert done()


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[Store]:
    async with Store(tmp_path / "f.db") as opened:
        yield opened


async def test_a_full_disk_does_not_spin_the_writer_and_the_rows_land_later(
    store: Store,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    db = store.db
    assert isinstance(db, Database)  # the SQLite engine's own queue
    attempts = 0
    flush = db.flush

    async def counted() -> None:
        nonlocal attempts
        attempts += 1
        await flush()

    monkeypatch.setattr(db, "flush", counted)
    caplog.set_level(logging.INFO, logger="orchestrator.store.db")
    await _fill(db)
    loop = asyncio.get_running_loop()
    started = loop.time()
    sent: list[str] = []
    while loop.time() - started < 1.0:  # a conversation going on for a second
        sent.append(f"m{len(sent)}")
        store.messages.log(KEY, "in", sent[-1])
        await asyncio.sleep(0.01)
    # 0.1 + 0.2 + 0.4 s of waiting fit in a second: a handful, not hundreds.
    assert 2 <= attempts <= 6, attempts
    said = [r.getMessage() for r in caplog.records if "cannot be written" in r.getMessage()]
    assert len(said) == 1 and "full" in said[0]
    assert _texts(tmp_path / "f.db") == []

    await _limit_pages(db, 1_000_000)  # space returns
    await _until(lambda: _texts(tmp_path / "f.db") == sent, db.retry_ceiling + 2)
    assert any("written again" in r.getMessage() for r in caplog.records)
    # And the writer is back to writing at once.
    before = loop.time()
    store.messages.log(KEY, "out", "after")
    await _until(lambda: _texts(tmp_path / "f.db")[-1:] == ["after"], 2)
    assert loop.time() - before < 0.5


async def test_past_the_cap_the_oldest_rows_go_with_one_warning(
    store: Store,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    db = store.db
    assert isinstance(db, Database)  # the SQLite engine's own queue
    db.behind_cap = 100
    caplog.set_level(logging.INFO, logger="orchestrator.store.db")
    await _fill(db)
    sent = [f"m{i}" for i in range(250)]
    for text in sent[:50]:
        store.messages.log(KEY, "in", text)
    await asyncio.sleep(0.2)  # the writer tries, fails and puts the rows back meanwhile
    for text in sent[50:]:
        store.messages.log(KEY, "in", text)
    await asyncio.sleep(0.4)  # and tries again
    dropping = [r for r in caplog.records if "dropping the oldest" in r.getMessage()]
    assert len(dropping) == 1
    assert any("cannot be written" in r.getMessage() for r in caplog.records)
    await _limit_pages(db, 1_000_000)
    await _until(lambda: _texts(tmp_path / "f.db") == sent[-100:], db.retry_ceiling + 2)
    [back] = [r.getMessage() for r in caplog.records if "written again" in r.getMessage()]
    assert "150 oldest rows dropped" in back


async def test_a_readers_flush_waits_for_the_writers_batch_on_its_way(store: Store) -> None:
    """A batch too big for the fast path goes through the thread: a second flush made
    while it is on its way returns only once its rows are in (a reader then sees them)."""
    db = store.db
    assert isinstance(db, Database)
    sql = "INSERT INTO messages(session, direction, text, ts) VALUES (?, 'in', ?, 0)"
    for n in range(200):  # over FAST_BATCH: the thread path
        db.write_behind(sql, ("s", f"row {n}"))
    first = asyncio.create_task(db.flush())
    await asyncio.sleep(0)  # the first flush has taken the rows and is writing them
    await db.flush()
    rows = await db.conn.execute_fetchall("SELECT count(*) FROM messages WHERE session='s'")
    assert next(iter(rows))[0] == 200
    await first
