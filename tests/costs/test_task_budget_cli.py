"""A task's budget with the real Claude Code CLI in the kennel: its calls reach the
scripted vendor only through the relay; once the task's spend passes ``budgets.task_usd``
the relay refuses the next call, the CLI reports the error, and the task ends with a
clear line (not the CLI's echo)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable

import pytest

from orchestrator.config import Settings
from tests.conftest import Driver, start_driver
from tests.fakes.model_server import EditFile, ScriptedModelServer, Text
from tests.fakes.require import require_binary

pytestmark = pytest.mark.real


@pytest.fixture
async def vendor() -> AsyncIterator[ScriptedModelServer]:
    async with ScriptedModelServer() as srv:
        yield srv


@pytest.fixture
async def claude(
    vendor: ScriptedModelServer, make_settings: Callable[..., Settings]
) -> AsyncIterator[Driver]:
    require_binary("claude")
    settings = make_settings(
        FETCH_HARNESS="claude-code",
        ANTHROPIC_BASE_URL=vendor.url,
        ANTHROPIC_API_KEY="sk-ant-budget-test",
        FETCH__HARNESS__MODEL="claude-sonnet-4-5",
        FETCH__BUDGETS__TASK_USD="0.00001",
    )
    app, driver = await start_driver(settings)
    try:
        yield driver
    finally:
        await app.__aexit__(None, None, None)


async def test_a_spent_task_budget_stops_the_task_cleanly(
    claude: Driver, vendor: ScriptedModelServer
) -> None:
    repo = claude.services.workspace.path("demo")
    vendor.script(
        EditFile(str(repo / "README.md"), "Teh quick", "The quick"),
        Text("Fixed the typo in README.md."),
    )
    failed = await claude.ask("fix the typo in README.md of demo", "failed", 120)
    text = " ".join(failed.split())
    assert "claude-code was stopped: task budget of $0.000010 reached for task #1" in text
    rows = await claude.services.store.usage.recent(50)
    relayed = [r for r in rows if r.source == "relay"]
    assert relayed and {(r.task, r.session) for r in relayed} == {
        (1, f"terminal:{claude.terminal.chat}")
    }
    assert any(r.status == 402 for r in relayed)  # refused at the relay
    assert sum(r.cost for r in relayed) > 0.00001
    paid = [r for r in relayed if r.status == 200]
    assert len(vendor.model_requests) == len(paid)  # nothing refused reached the vendor
    report = await claude.ask("/cost", "💰 Today")
    assert "relay $" in report
