"""The store on PostgreSQL beyond the contract suites: the same schema as SQLite's, the
families that have no suite of their own (grants, asks, /improve's records, the
dashboard's queries) on both engines, a starting process that leaves a live process's
queued messages alone and takes over a killed one's, and the one line a start gives for
a bad URL, an unreachable server or a server without pgvector."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from core.errors import StoreError
from core.events import SessionKey
from orchestrator.dashboard.queries import DashboardQueries
from orchestrator.improve.records import SqliteImprovements
from orchestrator.permissions.asks import Asks
from orchestrator.permissions.grants import GrantStore
from orchestrator.store import Store, once
from orchestrator.store.migrations import MIGRATIONS
from orchestrator.store.pg import PgDatabase, placeholders
from orchestrator.store.pg_migrations import PG_MIGRATIONS
from tests.fakes.postgres import PostgresError, PostgresServer, free_port, running_postgres
from tests.fakes.require import missing

KEY = SessionKey("terminal", "owner")


def test_placeholders_skip_string_literals() -> None:
    assert placeholders("SELECT '?', a FROM t WHERE b=? AND c='it''s ?' AND d=?") == (
        "SELECT '?', a FROM t WHERE b=$1 AND c='it''s ?' AND d=$2"
    )


async def test_both_engines_have_the_same_tables_and_columns(tmp_path: Path, pg_url: str) -> None:
    assert len(PG_MIGRATIONS) == len(MIGRATIONS)
    async with Store(tmp_path / "fetch.db") as lite, Store(tmp_path / "x", pg_url) as pg:
        assert await lite.db.schema_version() == await pg.db.schema_version() == len(MIGRATIONS)
        names = await lite.db.conn.execute_fetchall(
            "SELECT name FROM sqlite_master WHERE type='table' ORDER BY name"
        )
        lite_cols = {}
        for (name,) in names:
            cols = await lite.db.conn.execute_fetchall(f"PRAGMA table_info({name})")
            lite_cols[name] = [str(c[1]) for c in cols]
        rows = await pg.db.conn.execute_fetchall(
            "SELECT table_name, column_name FROM information_schema.columns"
            " WHERE table_schema = current_schema() AND table_name != 'fetch_schema'"
            " ORDER BY table_name, ordinal_position"
        )
        pg_cols: dict[str, list[str]] = {}
        for table, column in rows:
            pg_cols.setdefault(str(table), []).append(str(column))
        assert pg_cols == lite_cols
        lite_idx = await lite.db.conn.execute_fetchall(
            "SELECT name FROM sqlite_master WHERE type='index' AND sql IS NOT NULL"
        )
        pg_idx = await pg.db.conn.execute_fetchall(
            "SELECT indexname FROM pg_indexes WHERE schemaname = current_schema()"
        )
        assert {str(r[0]) for r in lite_idx} <= {str(r[0]) for r in pg_idx}


async def test_grants_asks_and_improvements(any_store: Store) -> None:
    store = any_store
    grants = GrantStore(store.db)
    asks = Asks(600, store.db)
    await asks.load()
    ask = await asks.open("alice", "tool:memory_*", KEY)
    assert await store.inbox.accept("terminal", "g1", KEY, {"text": "/grants yes"})
    with once.handling("terminal", "g1"):
        grant = await grants.add("alice", "tool:memory_*", "persisted", KEY, "owner", ask.nonce)
    asks.taken(ask.nonce)
    assert grant.id > 0
    assert await store.inbox.queued() == []  # the grant was the command's effect
    again = GrantStore(store.db)
    await again.load()
    assert [g.id for g in again.active()] == [grant.id]
    reloaded = Asks(600, store.db)
    await reloaded.load()
    assert reloaded.pending() == []  # answered with the grant, in its transaction
    assert await grants.revoke(grant.id) is not None
    await again.load()
    assert again.active() == []

    records = SqliteImprovements(store.db)
    first = await records.create(KEY, "owner", "faster start", "me/fetch")
    second = await records.create(KEY, "owner", "fewer words", "me/fetch")
    assert second > first
    await records.update(first, status="proposed", pr_number=7, pr_state="open")
    got = await records.get(first)
    assert got is not None and got.pr_number == 7 and got.status == "proposed"
    cut = await records.interrupt_running()
    assert [r.id for r in cut] == [second]


async def test_dashboard_queries(any_store: Store) -> None:
    store = any_store
    task = await store.work.create_task(KEY, "demo", "Fix the README", "demo")
    await store.messages.add(KEY, "in", "please FIX the readme")
    await store.messages.add(KEY, "out", "On it")
    await store.sessions.save(KEY, "idle", {})
    queries = DashboardQueries(store.db)
    found = await queries.sessions(query="fix")  # case-insensitive on both engines
    assert [s.key for s in found.rows] == ["terminal:owner"]
    tasks = await queries.tasks(query="readme")
    assert [t.id for t in tasks.rows] == [task]
    assert (await queries.snippets(["terminal:owner"], "readme"))["terminal:owner"].startswith(
        "please"
    )
    print_ = await queries.session_fingerprint("terminal:owner")
    assert print_[4] == "running"  # the chat's recent task statuses, joined
    calls, failed, _ = await queries.calls_since(0, "orchestrator")
    assert (calls, failed) == (0, 0)


async def test_unreachable_server_and_bad_url_are_one_line() -> None:
    with pytest.raises(StoreError) as refused:
        await PgDatabase(f"postgresql://fetch@127.0.0.1:{free_port()}/x").open()
    assert "cannot reach PostgreSQL at 127.0.0.1:" in str(refused.value)
    assert "connection refused" in str(refused.value)
    with pytest.raises(StoreError) as bad:
        await PgDatabase("postgresql://fetch@[oops/x").open()
    assert "not usable" in str(bad.value)


@pytest.fixture(scope="module")
def bare_server() -> Iterator[PostgresServer]:
    """A PostgreSQL without pgvector, as a user's own server may be."""
    try:
        with running_postgres(pgvector=False) as server:
            yield server
    except PostgresError as err:
        missing(f"no PostgreSQL for the tests: {err}", ci_must="install")


async def test_a_server_without_pgvector_is_refused_in_one_line(
    bare_server: PostgresServer,
) -> None:
    url = bare_server.url("postgres")
    with pytest.raises(StoreError) as refused:
        await PgDatabase(url).open()
    text = str(refused.value)
    assert "has no pgvector" in text and "\n" not in text


def test_fetch_says_one_line_and_exits_2(tmp_path: Path, bare_server: PostgresServer) -> None:
    """The real ``fetch serve``: no traceback, exit code 2, what is wrong and where."""
    cases = {
        f"postgresql://fetch@127.0.0.1:{free_port()}/fetch": "connection refused",
        bare_server.url("postgres"): "has no pgvector",
        "mysql://x@y/z": "store.url",
    }
    for url, needle in cases.items():
        env = {
            **os.environ,
            "FETCH_HOME": str(tmp_path / "home"),
            "FETCH_HARNESS": "demo",
            "FETCH_KENNEL": "bwrap",
            "FETCH_STORE_URL": url,
        }
        done = subprocess.run(
            [sys.executable, "-c", "from orchestrator.cli import main; main(['serve'])"],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            stdin=subprocess.DEVNULL,
            check=False,
        )
        assert done.returncode == 2, (url, done.stdout, done.stderr)
        assert needle in done.stderr, (url, done.stderr)
        assert "Traceback" not in done.stderr
        assert len(done.stderr.strip().splitlines()) == 1, done.stderr


CHILD = """
import asyncio, sys
from core.events import SessionKey
from orchestrator.store import Store

async def main() -> None:
    async with Store(__import__("pathlib").Path("unused.db"), sys.argv[1]) as store:
        await store.inbox.accept("telegram", "from-a", SessionKey("telegram", "1"), {"n": 1})
        print("accepted", flush=True)
        await asyncio.sleep(3600)  # handling it, until killed

asyncio.run(main())
"""

ROOT = Path(__file__).resolve().parents[2]


def _start(cwd: Path, url: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", CHILD, url],
        cwd=cwd,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )


async def test_a_live_processs_queued_messages_are_never_replayed_by_another(
    tmp_path: Path, pg_url: str
) -> None:
    child = _start(tmp_path, pg_url)
    try:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "accepted"
        async with Store(tmp_path / "b.db", pg_url) as b:
            await b.inbox.accept("telegram", "from-b", SessionKey("telegram", "1"), {"n": 2})
            # B starts next to a live A: only its own row is replayed.
            assert await b.inbox.queued() == [{"n": 2}]
            child.kill()
            child.wait(30)
            # A is gone (its connection dropped): B takes its row over, once.
            async with Store(tmp_path / "c.db", pg_url) as c:
                assert await b.inbox.queued() == [{"n": 1}, {"n": 2}]
                assert await c.inbox.queued() == []  # B lives: both rows are B's now
    finally:
        if child.poll() is None:
            child.kill()
            child.wait(30)
        if child.stdout is not None:
            child.stdout.close()


async def test_the_log_waits_out_a_server_restart(tmp_path: Path) -> None:
    """Rows written behind while the server is down are kept and written once it is back;
    a statement meanwhile fails as a StoreError the sender is told about."""
    try:
        context = running_postgres()  # not in tmp_path: its parents are 0700 (root)
        server = context.__enter__()
    except PostgresError as err:
        missing(f"no PostgreSQL for the tests: {err}", ci_must="install")
    try:
        url = server.create_database("restart")
        async with Store(tmp_path / "x.db", url) as store:
            assert isinstance(store.db, PgDatabase)
            store.db.retry_ceiling = 0.5
            store.messages.log(KEY, "in", "before")
            await store.messages.flush()
            server.stop()
            store.messages.log(KEY, "in", "while down")
            with pytest.raises(StoreError, match="unreachable"):
                await store.sessions.save(KEY, "idle", {})
            server.start()
            for _ in range(200):
                rows = await _texts(store)
                if rows == ["before", "while down"]:
                    break
                await asyncio.sleep(0.05)
            assert await _texts(store) == ["before", "while down"]
    finally:
        context.__exit__(None, None, None)


async def _texts(store: Store) -> list[str]:
    try:
        rows = await store.db.conn.execute_fetchall("SELECT text FROM messages ORDER BY id")
    except StoreError:
        return []
    return [str(r[0]) for r in rows]


def test_doctor_names_the_server_and_its_pgvector(
    tmp_path: Path, pg_url: str, bare_server: PostgresServer
) -> None:
    said = {}
    for name, url in (("good", pg_url), ("bare", bare_server.url("postgres"))):
        env = {
            **os.environ,
            "FETCH_HOME": str(tmp_path / "home"),
            "FETCH_HARNESS": "demo",
            "FETCH_KENNEL": "bwrap",
            "FETCH_STORE_URL": url,
        }
        done = subprocess.run(
            [sys.executable, "-c", "from orchestrator.cli import main; main(['doctor'])"],
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
            stdin=subprocess.DEVNULL,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        said[name] = next(line for line in done.stdout.splitlines() if line.startswith("database:"))
    assert "PostgreSQL at 127.0.0.1:" in said["good"] and "pgvector 0." in said["good"]
    assert "ERROR" in said["bare"] and "no pgvector" in said["bare"]


async def test_two_stores_claim_side_by_side_and_never_the_same_run(
    tmp_path: Path, pg_url: str
) -> None:
    """Two engines (two pools, as two processes have) claim the same due jobs and the same
    expired runs at once: every job is claimed once, every expired run taken back once."""
    from orchestrator.scheduler.jobs import SqliteJobs

    now = time.time()
    async with Store(tmp_path / "a", pg_url) as a, Store(tmp_path / "b", pg_url) as b:
        async with a.db.transaction() as conn:
            await conn.executemany(
                "INSERT INTO jobs(kind, text, channel, chat, cron, tz, spec, missed, status,"
                " next_at, created, updated) VALUES ('reminder', ?, 'terminal', 'owner', NULL,"
                " 'UTC', 't', 'run_once', 'active', ?, ?, ?)",
                [(f"r{i}", now - 1, now, now) for i in range(200)],
            )
        ja, jb = SqliteJobs(a.db), SqliteJobs(b.db)

        async def drain(jobs: SqliteJobs, holder: str) -> list[int]:
            got: list[int] = []
            while True:
                claims, handled = await jobs.claim_due(now, holder, 300, now - 3600, 7)
                got += [c.job.id for c in claims]
                if not handled:
                    return got
                await asyncio.sleep(0)

        first, second = await asyncio.gather(drain(ja, "a"), drain(jb, "b"))
        assert sorted(first + second) == list(range(1, 201))  # each job once
        assert first and second  # side by side, not one after the other
        # Every lease runs out: both take back at once, each run goes to one of them.
        later = now + 301
        (again_a, _), (again_b, _) = await asyncio.gather(
            ja.reclaim(later, "a2", 300, orphans_of_others=False),
            jb.reclaim(later, "b2", 300, orphans_of_others=False),
        )
        runs = [c.run.id for c in again_a + again_b]
        assert sorted(runs) == sorted(set(runs)) and len(runs) == 200


async def test_only_a_process_alone_on_the_database_does_the_start_up_recoveries(
    tmp_path: Path, pg_url: str
) -> None:
    """``alone``: the app runs the recoveries of a stopped Fetch (tasks cut short, open
    intents, /improve runs) only when no other process uses the database, since on a
    shared one they may be that process's live work."""
    async with Store(tmp_path / "a", pg_url) as a:
        assert a.db.alone
        async with Store(tmp_path / "b", pg_url) as b:
            assert not b.db.alone
    async with Store(tmp_path / "c", pg_url) as c:
        assert c.db.alone  # the others are gone
    async with Store(tmp_path / "fetch.db") as lite:
        assert lite.db.alone
