"""The test PostgreSQL (tests/fakes/postgres.py) is real, has pgvector, and gives each test
its own database."""

from __future__ import annotations

import asyncpg

from tests.fakes.postgres import PostgresServer


async def test_pg_url_is_a_fresh_database_with_pgvector(pg_url: str) -> None:
    conn = await asyncpg.connect(pg_url)
    try:
        assert await conn.fetchval("select count(*) from pg_tables where schemaname='public'") == 0
        await conn.execute("create table t (e vector(3))")
        await conn.execute("create index on t using hnsw (e vector_l2_ops)")
        await conn.execute("insert into t values ('[1,2,3]'), ('[9,9,9]')")
        nearest = await conn.fetchval("select e::text from t order by e <-> '[1,2,2]' limit 1")
        assert nearest == "[1,2,3]"
    finally:
        await conn.close()


def test_each_test_gets_its_own_database(pg_url: str, pg_server: PostgresServer) -> None:
    name = pg_url.rsplit("/", 1)[1]
    names = pg_server.psql("select datname from pg_database").split()
    assert name in names
    assert pg_server.psql("select 1", name).strip() == "1"
