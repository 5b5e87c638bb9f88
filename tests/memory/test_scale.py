"""Memory stays flat as rows grow (issue 26, item 7): the repeat check of a write is an
index lookup, never a scan of the subject's rows; keyword search ranks a bounded number
of items whatever the table's size; and migration 4 gives existing rows their key.

The figures are bench/memory_scale.py's; these tests hold the mechanisms that make them."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

from orchestrator.config import Settings
from orchestrator.memory import items, pg_search, search
from orchestrator.memory.schema import MIGRATIONS, _statements, migrate, text_key
from tests.memory.conftest import Running, on_postgres


def _plans(conn: Any, statements: list[str]) -> list[str]:
    """EXPLAIN QUERY PLAN of every SELECT run against memory_items (parameters as NULL:
    the plan does not depend on the values)."""
    out = []
    for sql in statements:
        if not sql.lstrip().upper().startswith("SELECT") or "memory_items" not in sql:
            continue
        args = (None,) * sql.count("?")
        detail = " | ".join(str(r[-1]) for r in conn.execute(f"EXPLAIN QUERY PLAN {sql}", args))
        out.append(f"{detail}  <-  {sql}")
    return out


async def _traced_write(run: Running, content: str, **kw: Any) -> tuple[list[str], bool]:
    """Write through the real memory thread, recording every statement it ran."""
    seen: list[str] = []

    def traced(conn: Any) -> tuple[list[str], bool]:
        conn.set_trace_callback(seen.append)
        try:
            result = items.remember(
                conn,
                kind="fact",
                content=content,
                tags=(),
                source=kw.get("source", "owner"),
                vec=None,
                signature="",
                threshold=0.9,
                vec_ok=run.memory.db.vec_ok,
                subject=kw.get("subject", "owner"),
                chat=kw.get("chat"),
            )
        finally:
            conn.set_trace_callback(None)
        return _plans(conn, seen), result.merged

    return await run.memory.db.run(traced)


async def test_the_repeat_check_is_an_index_lookup(
    memory_settings: Callable[..., Settings],
) -> None:
    async with Running(memory_settings(embeddings=False)) as run:
        for i in range(50):
            await run.memory.write(f"memory number {i} of the owner")
        plans, merged = await _traced_write(run, "MEMORY   number 7 of the OWNER")
        assert merged, "a repeat in other case and spacing is merged"
        for kw in ({}, {"source": "harness:claude", "chat": "telegram:1"}):
            plans, merged = await _traced_write(run, "a fresh memory", **kw)
            # One plan per SELECT; none of them walks the table.
            assert plans and not any("SCAN memory_items" in p for p in plans), plans
            assert any("USING INDEX memory_items_content_key" in p for p in plans), plans


async def test_a_repeat_is_merged_only_within_its_subject_and_author(
    memory_settings: Callable[..., Settings],
) -> None:
    async with Running(memory_settings(embeddings=False)) as run:
        first = await run.memory.write("the staging db listens on 5433")
        again = await run.memory.write("The staging DB listens on 5433")
        assert again.merged and again.item.id == first.item.id
        other = await run.memory.write("the staging db listens on 5433", subject="ann")
        assert not other.merged and other.item.id != first.item.id
        kennel = await run.memory.write(
            "the staging db listens on 5433", source="harness:claude", chat="telegram:1"
        )
        assert not kennel.merged, "a kennel never merges into the owner's row"
        owner = await run.memory.get(first.item.id)
        assert owner is not None and owner.source == "owner"
        # An edit through a merge moves the key with the text.
        changed = await run.memory.write("the staging db listens on 5433 ")
        assert changed.item.id == first.item.id
        keys = await run.memory.db.run(
            lambda c: c.execute(
                "SELECT content_key FROM memory_items WHERE id=?", (first.item.id,)
            ).fetchone()[0]
        )
        assert keys == text_key("the staging db listens on 5433")


def test_migration_4_keys_the_rows_it_finds(tmp_path: Path) -> None:
    conn = sqlite3.connect(tmp_path / "memory.db", isolation_level=None)
    conn.execute("CREATE TABLE memory_meta (key TEXT PRIMARY KEY, value TEXT)")
    for statement in [s for script in MIGRATIONS[:3] for s in _statements(script)]:
        conn.execute(statement)
    conn.execute("INSERT INTO memory_meta VALUES ('schema', '3')")
    conn.execute(
        "INSERT INTO memory_items(kind, content, source, created, updated) VALUES"
        " ('fact', 'Tabs  over spaces', 'owner', 0, 0),"
        " ('archive', 'a summary', 'archive', 0, 0)"
    )
    migrate(conn)
    rows = conn.execute("SELECT kind, content_key FROM memory_items ORDER BY id").fetchall()
    assert rows == [("fact", text_key("tabs over spaces")), ("archive", None)]
    assert items.repeat_of(conn, "tabs over SPACES", text_key("tabs over spaces"), "owner", None)
    conn.close()


class Recorder:
    """A connection that notes each statement and its parameters."""

    def __init__(self, conn: Any) -> None:
        self.conn = conn
        self.dialect = getattr(conn, "dialect", "sqlite")
        self.calls: list[tuple[str, tuple[Any, ...]]] = []

    def execute(self, sql: str, args: tuple[Any, ...] = ()) -> Any:
        self.calls.append((sql, args))
        return self.conn.execute(sql, args)


def _store(tmp_path: Path, texts: list[str]) -> sqlite3.Connection:
    conn = sqlite3.connect(tmp_path / "memory.db", isolation_level=None)
    migrate(conn)
    conn.executemany(
        "INSERT INTO memory_items(kind, content, source, created, updated) VALUES"
        " ('fact', ?, 'owner', 0, 0)",
        [(t,) for t in texts],
    )
    return conn


def test_keyword_search_never_ranks_every_holder_of_a_common_word(
    tmp_path: Path, monkeypatch: Any
) -> None:
    monkeypatch.setattr(search, "RANK_BUDGET", 40)
    texts = [f"deploy note {i}" for i in range(200)]
    texts[17] = "deploy note about the zebra migration"
    conn = _store(tmp_path, texts)
    rec = Recorder(conn)
    scores = search.keyword_scores(rec, "deploy zebra")
    assert max(scores, key=lambda i: scores[i]) == 18, "the rare word's item first"
    ranked = [args for sql, args in rec.calls if "bm25" in sql]
    assert ranked and all("deploy" not in str(args) for args in ranked), ranked
    # Every word common: the newest items holding most of the words, no bm25 at all.
    rec.calls.clear()
    scores = search.keyword_scores(rec, "deploy note")
    assert not [sql for sql, _ in rec.calls if "bm25" in sql]
    assert len(scores) == search.RANK_BUDGET and max(scores) == 200 and min(scores.values()) == 1
    conn.close()


def test_a_small_store_ranks_as_plain_bm25(tmp_path: Path) -> None:
    texts = [f"alpha beta {i}" for i in range(30)] + ["gamma alpha", "gamma gamma beta"]
    conn = _store(tmp_path, texts)
    query = "alpha gamma beta"
    plain = conn.execute(
        "SELECT rowid, bm25(memory_fts) AS b FROM memory_fts WHERE memory_fts MATCH ?"
        " ORDER BY b LIMIT 50",
        (search.fts_query(query),),
    ).fetchall()
    best = -min(float(r[1]) for r in plain)
    expected = {int(r[0]): -float(r[1]) / best for r in plain}
    got = search.keyword_scores(conn, query)
    assert got.keys() == expected.keys()
    assert all(abs(got[i] - expected[i]) < 1e-9 for i in got)
    conn.close()


# -- the same on PostgreSQL (store.url): the plans use their indexes ------------------------


def _explain(conn: Any, sql: str, args: tuple[Any, ...]) -> str:
    conn.execute("SET enable_seqscan = off")  # a tiny table: else a scan is cheaper
    try:
        return "\n".join(str(r[0]) for r in conn.execute(f"EXPLAIN {sql}", args).fetchall())
    finally:
        conn.execute("RESET enable_seqscan")


@on_postgres
async def test_postgres_plans_use_the_indexes(
    memory_settings: Callable[..., Settings],
) -> None:
    """SQLite's: test_the_repeat_check_is_an_index_lookup."""
    async with Running(memory_settings()) as run:
        for i in range(30):
            await run.memory.write(f"memory number {i} of the owner about deploys")
        again = await run.memory.write("MEMORY number 3 of the owner about deploys")
        assert again.merged
        qvec = (await run.memory.embedder.embed(["deploys"]))[0]  # type: ignore[union-attr]

        def plans(conn: Any) -> list[str]:
            repeat = items.REPEAT_SQL.replace(" INDEXED BY memory_items_content_key", "")
            return [
                _explain(conn, repeat, ("owner", text_key("x"))),
                _explain(
                    conn, "SELECT id FROM memory_vectors ORDER BY vec <=> ? LIMIT 10", (qvec,)
                ),
                _explain(
                    conn,
                    f"SELECT id FROM memory_items WHERE fts @@ {pg_search.TSQ}",
                    (pg_search.tsquery(["deploys"]),),
                ),
            ]

        repeat, vector, keyword = await run.memory.db.run(plans)
        assert "memory_items_content_key" in repeat, repeat
        assert "memory_vectors_hnsw" in vector, vector
        assert "memory_items_fts" in keyword, keyword
        hits = await run.memory.search("deploys of the owner", 3)
        assert hits and all("deploys" in h.item.content for h in hits)


@on_postgres
async def test_postgres_keyword_search_ranks_a_bounded_set(
    memory_settings: Callable[..., Settings], monkeypatch: Any
) -> None:
    """SQLite's: test_keyword_search_never_ranks_every_holder_of_a_common_word."""
    monkeypatch.setattr(pg_search, "RANK_BUDGET", 40)
    async with Running(memory_settings(embeddings=False)) as run:
        texts = [f"deploy note {i}" for i in range(200)]
        texts[17] = "deploy note about the zebra migration"

        def fill(conn: Any) -> None:
            conn.executemany(
                "INSERT INTO memory_items(kind, content, source, created, updated) VALUES"
                " ('fact', ?, 'owner', 0, 0)",
                [(t,) for t in texts],
            )

        await run.memory.db.run(fill)

        def ask(conn: Any, text: str) -> tuple[dict[int, float], list[tuple[str, Any]]]:
            rec = Recorder(conn)
            return search.keyword_scores(rec, text), rec.calls

        # Not analyzed yet: the words' items are counted; then from the statistics.
        for analyzed in (False, True):
            if analyzed:
                await run.memory.db.run(lambda c: c.execute("ANALYZE memory_items"))
            scores, calls = await run.memory.db.run(ask, "deploy zebra")
            assert max(scores, key=lambda i: scores[i]) == 18
            ranked = [args for sql, args in calls if "ts_rank" in sql]
            assert ranked and "deploy" not in ranked[0][0], ranked  # the rare word's items
            counted = any("count(*)" in sql for sql, _ in calls)
            assert counted != analyzed, calls
            scores, calls = await run.memory.db.run(ask, "deploy note")
            ranked_sql = [sql for sql, _ in calls if "ts_rank" in sql]
            assert ranked_sql and "ORDER BY id DESC LIMIT" in ranked_sql[0]
            assert len(scores) == pg_search.RANK_BUDGET and max(scores) == 200
