"""Zero tokens while idle: the whole app (SQLite, scheduler, memory with an embedding
endpoint, the terminal channel) with a model configured, 24 simulated hours on an
injected clock and no message: the model endpoint sees no request and the ledger has no
row. The control: one message afterwards does reach the model, so the test can fail.

The app's timer that can start a model call (the scheduler's tick, which fires prompt
jobs) and the budget's day run on the injected clock; memory archives on message volume,
not on time. The clock's sleepers are counted, so the soak proves the scheduler really
lived through the day.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from datetime import datetime
from zoneinfo import ZoneInfo

import pytest

from channels.terminal import TerminalChannel
from orchestrator.app import build_app
from orchestrator.config import Settings
from tests.conftest import Driver
from tests.fakes.model_server import ScriptedModelServer, Text

DAY = 86_400.0
STEP = 60.0  # the scheduler's longest tick


class SoakClock:
    """Simulated time: ``sleep`` waits until the test has advanced the clock past it."""

    def __init__(self, now: float) -> None:
        self.t = now
        self.sleeps = 0
        self._waiters: list[tuple[float, asyncio.Future[None]]] = []

    def now(self) -> float:
        return self.t

    async def sleep(self, seconds: float) -> None:
        self.sleeps += 1
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        entry = (self.t + seconds, future)
        self._waiters.append(entry)
        try:
            await future
        finally:
            self._waiters.remove(entry)

    async def advance(self, seconds: float) -> None:
        """Move time on, wake who is due, and wait until every sleeper sleeps again."""
        self.t += seconds
        woken = 0
        for when, future in list(self._waiters):
            if when <= self.t and not future.done():
                future.set_result(None)
                woken += 1
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 5
        while woken and loop.time() < deadline:
            await asyncio.sleep(0.001)
            if sum(not f.done() for _, f in self._waiters) >= woken:
                return


@pytest.fixture
async def model() -> AsyncIterator[ScriptedModelServer]:
    async with ScriptedModelServer() as srv:
        yield srv


@pytest.fixture
def settings(model: ScriptedModelServer, make_settings: Callable[..., Settings]) -> Settings:
    return make_settings(
        FETCH_MODEL_BASE_URL=model.url + "/v1",
        FETCH_MODEL="gpt-4o",
        FETCH_EMBEDDING_BASE_URL=model.url + "/v1",
        FETCH__SCHEDULER__TICK_SECONDS="60",
        FETCH__BUDGETS__DAILY_USD="5",
    )


async def _usage_rows(driver: Driver) -> int:
    store = driver.services.store
    await store.usage.flush()
    rows = await store.db.conn.execute_fetchall("SELECT COUNT(*) FROM usage")
    return int(next(iter(rows))[0])


async def test_a_day_idle_costs_nothing_and_a_message_does(
    settings: Settings, model: ScriptedModelServer
) -> None:
    start = datetime(2026, 3, 10, 9, tzinfo=ZoneInfo("UTC")).timestamp()
    clock = SoakClock(start)
    terminal = TerminalChannel(settings.terminal.chat)
    app = build_app(settings, channels=[terminal], clock=clock)
    await app.__aenter__()
    driver = Driver(app, terminal)
    try:
        assert driver.services.scheduler is not None and driver.services.planner.configured
        assert driver.services.memory.embedder is not None  # memory could embed, if asked
        await asyncio.sleep(0.2)  # whatever start-up does in the background is done
        before = len(model.requests)
        embedded = len(model.embeddings.requests)
        for _ in range(int(DAY / STEP)):
            await clock.advance(STEP)
        assert clock.t - start == DAY
        assert clock.sleeps >= DAY / STEP  # the scheduler ticked through the whole day
        assert len(model.requests) == before == 0, [r.path for r in model.requests]
        assert len(model.embeddings.requests) == embedded == 0  # its own route
        assert await _usage_rows(driver) == 0
        assert await driver.quiet(0.2) == []  # and nobody was told anything

        # the control: one question is one paid call, so the soak above could fail
        model.script(Text("A monad wraps a value."))
        await driver.ask("what is a monad?", "A monad wraps")
        assert len(model.model_requests) >= 1
        assert await _usage_rows(driver) >= 1
    finally:
        await app.__aexit__(None, None, None)
