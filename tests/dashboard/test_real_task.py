"""A real task (the demo harness in the real bwrap kennel, real git) seen on the
dashboard: the diff waiting for approval, then the commit's diff, the harness's events,
and the session's replay with its messages."""

from __future__ import annotations

from orchestrator.store.db import key_str
from orchestrator.store.usage import UsageRow
from tests.dashboard.conftest import Web


async def test_a_real_task_shows_its_diff_events_and_calls(web: Web) -> None:
    await web.driver.ask("fix the typo in README.md of demo", "Apply? (yes/no)", 90)
    task = await web.services.store.work.get_task(1)
    assert task is not None and task.status == "proposed"
    web.services.store.usage.record(
        UsageRow(
            "relay",
            model="demo-model",
            task=1,
            tokens_in=120,
            tokens_out=30,
            cost=0.0123,
            latency_ms=456.0,
            session=task.session,
        )
    )
    await web.services.store.usage.flush()
    status, body = await web.get("/tasks/1")
    assert status == 200
    assert "waiting for approval" in body
    assert "-Teh quick brown fox." in body and "+The quick brown fox." in body
    assert "demo-model" in body and "456 ms" in body and "$0.0123" in body
    assert "No events recorded" not in body  # the demo CLI's events were journaled
    await web.driver.ask("yes", "Committed", 60)
    status, body = await web.get("/tasks/1")
    assert "commit " in body and "+The quick brown fox." in body
    assert "committed" in body
    status, body = await web.get(f"/sessions/{key_str(web.driver.terminal_key())}")
    assert status == 200
    assert "fix the typo in README.md of demo" in body and "Committed" in body
    assert 'href="/tasks/1"' in body
    status, body = await web.get("/tasks?q=typo")
    assert 'href="/tasks/1"' in body
    status, body = await web.get("/tasks?q=nothing-like-it")
    assert 'href="/tasks/1"' not in body
