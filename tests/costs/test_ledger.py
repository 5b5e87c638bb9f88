"""The ledger's arithmetic and budgets, on a real SQLite file with an injected clock:
prices, one warning at 80% per day and per task, the stop at 100%, a new day, the
relay's entries, and /cost's text."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from orchestrator.app import SHIPPED_DATA
from orchestrator.costs.ledger import BudgetReached, CostLedger
from orchestrator.costs.prices import PriceTable, load_defaults
from orchestrator.costs.report import bar, cost_report
from orchestrator.costs.settings import BudgetSettings, Price
from orchestrator.providers.chain import Attempt
from orchestrator.store import Store

TZ = "Europe/Berlin"
# Tuesday 2026-03-10 10:00 in Berlin
MORNING = datetime(2026, 3, 10, 10, tzinfo=ZoneInfo(TZ)).timestamp()


class Clock:
    def __init__(self) -> None:
        self.at = MORNING

    def __call__(self) -> float:
        return self.at


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[Store]:
    async with Store(tmp_path / "fetch.db") as s:
        yield s


def _ledger(store: Store, clock: Clock, said: list[str], **budgets: float) -> CostLedger:
    prices = PriceTable(
        load_defaults(SHIPPED_DATA / "prices.yaml"), {"house-model": Price(input=1, output=2)}
    )
    return CostLedger(
        store.usage, prices, BudgetSettings(**budgets), TZ, now=clock, warn=said.append
    )


def _call(model: str, tokens_in: int, tokens_out: int, status: int = 200) -> Attempt:
    return Attempt("openai", model, status, "", 12.5, tokens_in, tokens_out)


async def test_each_call_is_priced_from_the_table_and_recorded(store: Store) -> None:
    clock, said = Clock(), list[str]()
    ledger = _ledger(store, clock, said)
    record = ledger.recorder("orchestrator", session="terminal:owner", message=7)
    record(_call("gpt-4o-2024-08-06", 1_000_000, 100_000))  # 2.50 + 1.00
    record(_call("house-model", 500_000, 0))  # the owner's own price: 0.50
    record(_call("llama3", 10, 10))  # unknown: $0
    record(_call("gpt-4o", 0, 0, status=500))  # a failed attempt, recorded, free
    rows = await store.usage.recent(10)
    assert [r.cost for r in reversed(rows)] == pytest.approx([3.5, 0.5, 0.0, 0.0])
    assert {(r.session, r.message, r.source) for r in rows} == {
        ("terminal:owner", 7, "orchestrator")
    }
    assert rows[0].status == 500 and rows[0].latency_ms == 12.5
    assert ledger.spent_today() == pytest.approx(4.0)
    assert said == []  # no budgets: nothing to say


async def test_80_percent_warns_once_and_100_percent_stops(store: Store) -> None:
    clock, said = Clock(), list[str]()
    ledger = _ledger(store, clock, said, daily_usd=5.0)
    record = ledger.recorder("orchestrator")
    record(_call("house-model", 3_000_000, 0))  # $3: 60%
    assert said == []
    record(_call("house-model", 1_100_000, 0))  # $4.10: 82%
    record(_call("house-model", 100_000, 0))  # $4.20: still 84%, not said again
    assert len(said) == 1 and said[0].startswith("⚠️ $4.10 of today's budget of $5.00")
    ledger.check()  # under 100%: calls go on
    record(_call("house-model", 1_000_000, 0))  # $5.20
    assert len(said) == 2 and said[1].startswith("🛑 $5.20 of today's budget of $5.00")
    with pytest.raises(BudgetReached) as stop:
        ledger.check()
    assert str(stop.value) == (
        "daily budget of $5.00 reached ($5.20 spent today); /cost for details; raise "
        "budgets.daily_usd or wait until tomorrow (Europe/Berlin)"
    )
    record(_call("house-model", 1_000_000, 0))
    assert len(said) == 2  # the stop is said once
    clock.at += 15 * 3600  # 01:00 the next day in Berlin
    ledger.check()  # a new day, a new budget
    assert ledger.spent_today() == 0.0


async def test_a_restart_keeps_counting_the_same_day(store: Store) -> None:
    clock, said = Clock(), list[str]()
    first = _ledger(store, clock, said, daily_usd=1.0)
    first.recorder("orchestrator")(_call("house-model", 1_000_000, 0))
    again = _ledger(store, clock, said, daily_usd=1.0)
    await again.load()
    assert again.spent_today() == pytest.approx(1.0)
    assert again.refusal() is not None


async def test_a_task_budget_and_the_relays_entries(store: Store) -> None:
    clock, said = Clock(), list[str]()
    ledger = _ledger(store, clock, said, task_usd=1.0)
    gate = ledger.gate(4)
    entry = {
        "task": 4,
        "provider": "anthropic",
        "model": "claude-sonnet-4-5-20250929",
        "status": 200,
        "latency_ms": 800.0,
        "tokens_in": 100_000,  # $0.30
        "tokens_out": 40_000,  # $0.60
    }
    ledger.on_relay_call(entry)
    assert gate() is None and len(said) == 1 and "task #4's budget" in said[0]
    ledger.on_relay_call(entry)
    refused = gate()
    assert refused is not None and refused.startswith("task budget of $1.00 reached for task #4")
    assert ledger.gate(5)() is None  # another task has its own budget
    rows = await store.usage.recent(5)
    assert {(r.source, r.task, r.provider) for r in rows} == {("relay", 4, "anthropic")}
    assert sum(r.cost for r in rows) == pytest.approx(1.8)


async def test_cost_report_for_the_phone(store: Store) -> None:
    clock, said = Clock(), list[str]()
    ledger = _ledger(store, clock, said, daily_usd=5.0, task_usd=2.0)
    ledger.recorder("orchestrator", session="t:o")(_call("house-model", 2_000_000, 0))
    ledger.on_relay_call({"task": 9, "model": "llama3", "tokens_in": 5, "status": 200})
    ledger.on_relay_call({"task": 9, "model": "house-model", "tokens_out": 300_000})
    clock.at -= 2 * 86400  # Sunday: last week, not in "this week"
    ledger.recorder("orchestrator")(_call("house-model", 1_000_000, 0))
    clock.at += 2 * 86400
    text = await cost_report(ledger, store.usage, now=clock, task=9)
    assert "💰 Today (Europe/Berlin): $2.60 · 3 calls · 2000.0k in / 300.0k out" in text
    assert "by model: house-model $2.60 (2) · llama3 $0.00 (1)" in text
    assert "by source: orchestrator $2.00 (1) · relay $0.60 (2)" in text
    assert "📅 This week: $2.60 · 3 calls" in text
    assert "🔧 Task #9 (running): $0.60 · 2 calls" in text
    assert "today ▓▓▓▓░░░░ 52% of $5.00" in text
    assert "task #9 ▓▓░░░░░░ 30% of $2.00" in text
    assert "❔ Unpriced (counted as $0): llama3" in text


def test_the_bar_is_full_at_the_budget_and_beyond() -> None:
    assert bar(0, 5) == "░░░░░░░░ 0% of $5.00"
    assert bar(5, 5) == "▓▓▓▓▓▓▓▓ 100% of $5.00"
    assert bar(7.5, 5) == "▓▓▓▓▓▓▓▓ 150% of $5.00"


async def test_a_configured_model_without_a_price_is_warned_at_start_not_by_a_message(
    store: Store, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The warning is a start-up line: the first message after start does not pay for
    it, and it is said once per model (a model only a message names still is, once)."""
    from orchestrator.config import load_settings
    from orchestrator.costs.wiring import build_ledger

    settings = load_settings(
        None,
        {
            "FETCH_HOME": str(tmp_path),
            "FETCH_MODEL_BASE_URL": "http://127.0.0.1:9/v1",
            "FETCH_MODEL": "house-model-7",
        },
    )
    with caplog.at_level("WARNING", logger="orchestrator.costs.prices"):
        ledger = await build_ledger(settings, store.usage, SHIPPED_DATA, lambda _: None, Clock())
    unpriced = [r for r in caplog.records if "no price for model" in r.getMessage()]
    assert len(unpriced) == 1 and "house-model-7" in unpriced[0].getMessage()
    caplog.clear()
    with caplog.at_level("WARNING", logger="orchestrator.costs.prices"):
        ledger.recorder("planner")(_call("house-model-7", 100, 10))
        ledger.recorder("planner")(_call("other-model-1", 100, 10))
        ledger.recorder("planner")(_call("other-model-1", 100, 10))
    said = [r.getMessage() for r in caplog.records]
    assert len(said) == 1 and "other-model-1" in said[0], said


def test_a_priced_model_is_not_warned_about(caplog: pytest.LogCaptureFixture) -> None:
    table = PriceTable(
        load_defaults(SHIPPED_DATA / "prices.yaml"), {"mine": Price(input=1, output=2)}
    )
    with caplog.at_level("WARNING", logger="orchestrator.costs.prices"):
        table.warn_unpriced(["mine", "gpt-4o-mini", ""])
    assert not caplog.records
