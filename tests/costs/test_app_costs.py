"""Costs through the whole app: the real openai SDK against a scripted endpoint on
127.0.0.1, the real SQLite file, the terminal channel as the phone."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable

import pytest

from orchestrator.config import Settings
from tests.conftest import Driver, start_driver
from tests.fakes.model_server import Error, ScriptedModelServer, Text

GPT4O_IN, GPT4O_OUT = 2.50, 10.00  # the shipped default, USD per 1M tokens


@pytest.fixture
async def model() -> AsyncIterator[ScriptedModelServer]:
    async with ScriptedModelServer() as srv:
        yield srv


async def _driver(
    model: ScriptedModelServer, make_settings: Callable[..., Settings], **env: str
) -> AsyncIterator[Driver]:
    settings = make_settings(FETCH_MODEL_BASE_URL=model.url + "/v1", FETCH_MODEL="gpt-4o", **env)
    app, driver = await start_driver(settings)
    try:
        yield driver
    finally:
        await app.__aexit__(None, None, None)


@pytest.fixture
async def fetch(
    model: ScriptedModelServer, make_settings: Callable[..., Settings]
) -> AsyncIterator[Driver]:
    async for driver in _driver(model, make_settings):
        yield driver


@pytest.fixture
async def tight(
    model: ScriptedModelServer, make_settings: Callable[..., Settings]
) -> AsyncIterator[Driver]:
    async for driver in _driver(model, make_settings, FETCH__BUDGETS__DAILY_USD="0.00001"):
        yield driver


async def test_each_model_call_is_a_priced_row_linked_to_its_message(
    fetch: Driver, model: ScriptedModelServer
) -> None:
    model.script(Error(500, "flaky"), Text("A monad is a monoid in the category of endofunctors."))
    await fetch.ask("what is a monad?", "monoid")
    usage = fetch.services.store.usage
    rows = list(reversed(await usage.recent(10)))
    db = fetch.services.store.db.conn
    (inbound,) = await db.execute_fetchall(
        "SELECT id FROM messages WHERE direction='in' AND text='what is a monad?'"
    )
    session = f"terminal:{fetch.terminal.chat}"
    # the SDK's own retry is off: one failed row, then the answer
    assert [(r.source, r.status, r.session, r.message) for r in rows] == [
        ("orchestrator", 500, session, inbound[0]),
        ("orchestrator", 200, session, inbound[0]),
    ]
    good = rows[1]
    answered = model.model_requests[1]
    assert answered.body is not None and answered.body["model"] == "gpt-4o"
    assert good.tokens_in > 0 and good.tokens_out > 0
    assert good.cost == pytest.approx(
        (good.tokens_in * GPT4O_IN + good.tokens_out * GPT4O_OUT) / 1_000_000
    )
    assert rows[0].cost == 0 and rows[0].error == "answered HTTP 500"
    per_message = await usage.by_message(session)
    assert [(m.key, m.calls) for m in per_message] == [(str(inbound[0]), 2)]
    report = await fetch.ask("/cost", "💰 Today")
    assert "by model: gpt-4o $" in report and "(2)" in report
    assert "failed calls: 1" in report and "Budgets: none set" in report


async def test_a_spent_daily_budget_stops_the_model_not_the_commands(
    tight: Driver, model: ScriptedModelServer
) -> None:
    model.script(Text("First answer, and the budget is gone."))
    await tight.ask("what is a monad?", "First answer")
    stop = " ".join((await tight.expect("🛑")).split())  # one message when 100% is crossed
    assert "of today's budget of $0.000010" in stop and "model calls are stopped" in stop
    calls = len(model.requests)
    refused = " ".join((await tight.ask("and what is a functor?", "🛑")).split())
    assert "daily budget of $0.000010 reached" in refused
    assert "raise budgets.daily_usd or wait until tomorrow (UTC)" in refused
    assert len(model.requests) == calls  # no model call was made
    report = await tight.ask("/cost", "💰 Today")  # commands need no model
    assert "today ▓▓▓▓▓▓▓▓" in report and "🛑 daily budget" in report
    status = await tight.ask("/status", "Fetch ·")
    assert "spent today: $0.0" in status and "of $0.000010" in status
    assert not any("🛑" in s for s in await tight.quiet(0.3))  # said once, not per call
