"""What the cost ledger (``UsagePort``) promises, for SQLite on a real file and in memory:
the sums budgets, /cost and the dashboard read."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from orchestrator.store.usage import MemoryUsage, UsagePort, UsageRow
from tests.store.conftest import ALL, engine_store

# 2026-03-10 12:00 UTC, a Tuesday
NOON = datetime(2026, 3, 10, 12, tzinfo=ZoneInfo("UTC")).timestamp()
HOUR = 3600.0


@pytest.fixture(params=ALL)
async def usage(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[UsagePort]:
    if request.param != "memory":
        async with engine_store(request.param, tmp_path, request) as store:
            yield store.usage
    else:
        yield MemoryUsage()


def _row(at: float, **kw: object) -> UsageRow:
    base: dict[str, object] = {"source": "orchestrator", "model": "gpt-4o", "at": at}
    base.update(kw)
    return UsageRow(**base)  # type: ignore[arg-type]


async def test_an_empty_ledger_sums_to_zero(usage: UsagePort) -> None:
    total = await usage.total(0)
    assert (total.calls, total.tokens_in, total.tokens_out, total.cost) == (0, 0, 0, 0.0)
    assert await usage.by_model(0) == [] and await usage.recent() == []


async def test_totals_respect_the_window_task_and_session(usage: UsagePort) -> None:
    usage.record(_row(NOON, tokens_in=100, tokens_out=10, cost=0.5, task=1, session="t:a"))
    usage.record(_row(NOON + HOUR, tokens_in=200, tokens_out=20, cost=1.0, task=2))
    usage.record(_row(NOON - 2 * HOUR, cost=4.0, session="t:a"))
    all_ = await usage.total(0)
    assert (all_.calls, all_.tokens_in, all_.tokens_out) == (3, 300, 30)
    assert all_.cost == pytest.approx(5.5)
    assert (await usage.total(NOON)).cost == pytest.approx(1.5)  # since: inclusive
    assert (await usage.total(NOON, NOON + HOUR)).cost == pytest.approx(0.5)  # until: not
    assert (await usage.total(0, task=2)).cost == pytest.approx(1.0)
    assert (await usage.total(0, session="t:a")).cost == pytest.approx(4.5)
    assert (await usage.total(NOON, session="t:a", task=1)).calls == 1


async def test_failed_calls_are_counted_as_errors(usage: UsagePort) -> None:
    usage.record(_row(NOON, status=200))
    usage.record(_row(NOON, status=500, error="HTTP 500"))
    usage.record(_row(NOON, status=0, error="connection refused"))
    assert (await usage.total(0)).errors == 2


async def test_by_model_and_source_are_dearest_first(usage: UsagePort) -> None:
    usage.record(_row(NOON, model="cheap", cost=0.1))
    usage.record(_row(NOON, model="dear", cost=2.0, source="relay"))
    usage.record(_row(NOON, model="cheap", cost=0.2, source="summarize"))
    models = await usage.by_model(0)
    assert [(m.key, m.calls) for m in models] == [("dear", 1), ("cheap", 2)]
    assert models[1].cost == pytest.approx(0.3)
    sources = await usage.by_source(0)
    assert [s.key for s in sources] == ["relay", "summarize", "orchestrator"]


async def test_by_day_follows_the_owners_timezone(usage: UsagePort) -> None:
    # 23:30 UTC on the 10th is already the 11th in Berlin (UTC+1 in March)
    usage.record(_row(NOON, cost=1.0))
    usage.record(_row(NOON + 11.5 * HOUR, cost=2.0))
    usage.record(_row(NOON + 24 * HOUR, cost=4.0))
    utc = await usage.by_day(0, None, "UTC")
    assert [(d.key, d.cost) for d in utc] == [("2026-03-10", 3.0), ("2026-03-11", 4.0)]
    berlin = await usage.by_day(0, None, "Europe/Berlin")
    assert [(d.key, d.cost) for d in berlin] == [("2026-03-10", 1.0), ("2026-03-11", 6.0)]
    # a quarter-hour zone: 12:00 UTC + 11:45 = 23:45 in Kathmandu (UTC+5:45) the 10th
    nepal = await usage.by_day(0, None, "Asia/Kathmandu")
    assert [d.key for d in nepal] == ["2026-03-10", "2026-03-11"]
    assert await usage.by_day(NOON + 20 * HOUR, None, "UTC") == [
        (await usage.by_day(0, None, "UTC"))[1]
    ]


async def test_by_task_session_and_message(usage: UsagePort) -> None:
    usage.record(_row(NOON, task=7, cost=1.0, session="t:a", message=3))
    usage.record(_row(NOON, task=7, cost=1.0, source="relay", session="t:a"))
    usage.record(_row(NOON, task=8, cost=0.5, session="t:b", message=4))
    usage.record(_row(NOON, cost=0.25, session="t:a", message=5))
    tasks = await usage.by_task(0)
    assert [(t.key, t.calls, t.cost) for t in tasks] == [("7", 2, 2.0), ("8", 1, 0.5)]
    assert [t.key for t in await usage.by_task(0, limit=1)] == ["7"]
    sessions = await usage.by_session(0)
    assert [(s.key, s.calls) for s in sessions] == [("t:a", 3), ("t:b", 1)]
    messages = await usage.by_message("t:a")
    assert [(m.key, m.cost) for m in messages] == [("5", 0.25), ("3", 1.0)]
    assert [m.key for m in await usage.by_message("t:a", limit=1)] == ["5"]


async def test_recent_pages_newest_first(usage: UsagePort) -> None:
    for n in range(5):
        usage.record(_row(NOON + n, tokens_in=n, error="x" * 900 if n == 4 else ""))
    page = await usage.recent(2)
    assert [r.tokens_in for r in page] == [4, 3]
    assert len(page[0].error) == 500  # bounded when kept
    more = await usage.recent(2, before=page[-1].id)
    assert [r.tokens_in for r in more] == [2, 1]
    assert [r.tokens_in for r in await usage.recent(10, before=more[-1].id)] == [0]


async def test_a_row_recorded_without_a_time_is_stamped_now(usage: UsagePort) -> None:
    usage.record(UsageRow(source="embed", model="e"))
    (row,) = await usage.recent(1)
    assert row.at > NOON and row.source == "embed" and row.message is None
