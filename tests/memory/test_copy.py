"""Memory moves between its SQLite file and PostgreSQL without loss (issue 25, 3): items
with ids, text keys and vectors, archive watermarks, the embedding model; a search on the
target finds what it found on the source, and the copy is refused into a non-empty one."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from orchestrator.config import Settings
from orchestrator.memory.copy import COLUMNS, MemoryCopyError, copy_memory, open_side
from tests.memory.conftest import Running

FACTS = (
    "the staging db listens on 5433",
    "deploys go out on Tuesdays after the standup",
    "the owner prefers tabs over spaces",
    "invoices are filed in the blue folder",
)


async def _search(settings: Settings) -> tuple[list[tuple[int, str]], list[int], str]:
    async with Running(settings) as run:
        hits = await run.memory.search("when do deploys go out", 3)
        again = await run.memory.write("The staging DB listens on 5433")
        found = [(h.item.id, h.item.content) for h in hits]
        return found, [again.item.id], run.memory.status_line()


async def test_sqlite_to_postgres_and_back(
    memory_settings: Callable[..., Settings], pg_url: str, tmp_path: Path
) -> None:
    home = memory_settings()
    async with Running(home) as run:
        for fact in FACTS:
            await run.memory.write(fact)
        await run.memory.write("an archived summary", source="archive")
        await run.memory.db.run(
            lambda c: c.execute(
                "INSERT INTO memory_watermarks(thread, last_msg) VALUES ('telegram:1', 42)"
            )
        )
        before = await run.memory.search("when do deploys go out", 3)
    assert before and before[0].item.content == FACTS[1]
    source = home.home_dir / "memory" / "memory.db"

    copied = await copy_memory(source, pg_url)
    assert (copied.items, copied.vectors, copied.watermarks) == (5, 5, 1)
    on_pg = memory_settings(FETCH_STORE_URL=pg_url)
    hits, repeat, mode = await _search(on_pg)
    assert hits == [(h.item.id, h.item.content) for h in before]
    assert repeat == [1], "the text key came along: a repeat merges into #1"
    assert mode.startswith("memory: hybrid")  # the same model: nothing to re-embed
    assert "on PostgreSQL 127.0.0.1:" in mode and "re-embedding" not in mode

    back = tmp_path / "back" / "memory.db"
    copied = await copy_memory(pg_url, back)
    assert (copied.items, copied.vectors, copied.watermarks) == (5, 5, 1)
    with pytest.raises(MemoryCopyError, match="not empty"):
        await copy_memory(source, pg_url)
    with pytest.raises(MemoryCopyError, match="no memory to copy"):
        await copy_memory(tmp_path / "nothing" / "memory.db", pg_url)


def _columns(where: str | Path) -> list[str]:
    conn, _ = open_side(where)
    try:
        if isinstance(where, str):
            rows = conn.execute(
                "SELECT column_name FROM information_schema.columns WHERE table_name ="
                " 'memory_items' AND column_name != 'fts' ORDER BY ordinal_position"
            ).fetchall()
        else:
            rows = conn.execute("SELECT name FROM pragma_table_info('memory_items')").fetchall()
        return [str(r[0]) for r in rows]
    finally:
        conn.close()


async def test_both_engines_have_the_same_item_columns(pg_url: str, tmp_path: Path) -> None:
    """pg_schema.py's history makes what schema.py's makes (and the copy's COLUMNS are all)."""
    lite = await asyncio.to_thread(_columns, tmp_path / "memory.db")
    pg = await asyncio.to_thread(_columns, pg_url)
    assert lite == pg and set(lite) == {c.strip() for c in COLUMNS.split(",")}


def _fetch_copy(home: Path, source: str, target: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "FETCH_HOME": str(home), "FETCH_HARNESS": "demo"}
    env.pop("FETCH_STORE_URL", None)
    argv = ["store", "copy", "--from", source, "--to", target]
    return subprocess.run(
        [sys.executable, "-c", f"from orchestrator.cli import main; main({argv!r})"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


async def test_fetch_store_copy_moves_memory_with_the_tables(
    memory_settings: Callable[..., Settings], pg_url: str, tmp_path: Path
) -> None:
    """The real command moves a home whole: the store's tables and memory's own file go
    to PostgreSQL, and back into a new home, where a search finds what it found before."""
    home = memory_settings(embeddings=False)
    async with Running(home) as run:
        for fact in FACTS:
            await run.memory.write(fact)
        before = [h.item.content for h in await run.memory.search("deploys Tuesdays", 3)]
    assert before and before[0] == FACTS[1]

    there = await asyncio.to_thread(_fetch_copy, tmp_path / "x", str(home.db_path), pg_url)
    assert there.returncode == 0, there.stderr
    assert "memory: 4 items" in there.stdout, there.stdout

    back = tmp_path / "back" / "fetch.db"
    returned = await asyncio.to_thread(_fetch_copy, tmp_path / "x", pg_url, str(back))
    assert returned.returncode == 0, returned.stderr
    assert "memory: 4 items" in returned.stdout, returned.stdout
    moved = memory_settings(embeddings=False, FETCH_HOME=str(back.parent))
    async with Running(moved) as run:
        after = [h.item.content for h in await run.memory.search("deploys Tuesdays", 3)]
    assert after == before
