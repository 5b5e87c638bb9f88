"""The whole loop with the store on a real PostgreSQL (``store.url``): a task's diff, yes,
the commit, /undo, a restart between the diff and the yes, and a reminder that fires, with
no fetch.db in the home (every table family is on PostgreSQL)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from orchestrator.config import Settings
from tests.conftest import git, start_driver


async def test_the_loop_and_a_restart_on_postgresql(
    make_settings: Callable[..., Settings], pg_url: str
) -> None:
    settings = make_settings(FETCH_STORE_URL=pg_url)
    app, first = await start_driver(settings)
    repo = first.services.workspace.path("demo")
    original = git(repo, "rev-parse", "HEAD")
    try:
        diff = await first.ask("fix the typo in README.md of demo", "Apply? (yes/no)")
        assert "+The quick" in diff
    finally:
        await app.__aexit__(None, None, None)
    app, second = await start_driver(settings)  # the diff waits in PostgreSQL
    try:
        session = await second.services.sessions.get(second.terminal_key())
        assert session.state == "GUARDING" and session.data.approval_id is not None
        done = await second.ask("yes", "Committed")
        head = git(repo, "rev-parse", "HEAD")
        assert head[:7] in done and git(repo, "rev-parse", "HEAD^") == original
        assert head[:7] in await second.ask("/undo", "Reverted")
        await second.ask("/remind in 1s stretch", "Reminder #")
        await second.expect("⏰ stretch", timeout=30)
        store = second.services.store
        assert store.db.dialect == "postgresql"
        statuses: list[str] = []
        for _ in range(100):  # the run is marked done just after the message went out
            rows = await store.db.conn.execute_fetchall(
                "SELECT r.status FROM job_runs r JOIN jobs j ON j.id = r.job_id"
                " WHERE j.text LIKE '%stretch%'"
            )
            statuses = [str(r[0]) for r in rows]
            if statuses == ["done"]:
                break
            await asyncio.sleep(0.05)
        assert statuses == ["done"]
    finally:
        await app.__aexit__(None, None, None)
    assert not settings.db_path.exists()
