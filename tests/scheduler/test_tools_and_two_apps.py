"""The model's scheduling tools (called as the planner calls them), and two Fetch apps on
one home: the second starts and serves, but says scheduling runs in the first."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from orchestrator.config import Settings
from orchestrator.context import Context
from orchestrator.tools import build_tools, check_args
from tests.conftest import Driver, start_driver


async def call(fetch: Driver, name: str, args: dict[str, Any]) -> str:
    tool = build_tools().get(name)
    assert tool is not None
    services = fetch.services
    session = await services.sessions.get(fetch.terminal_key())
    inbound = await fetch.push("/help")  # any owner message gives the context its inbound
    ctx = Context(inbound=inbound, session=session, services=services, text="")
    return (await tool.handler(ctx, check_args(tool, args))).content


async def test_schedule_tools(fetch: Driver) -> None:
    made = await call(
        fetch,
        "schedule",
        {"text": "check the nightly build of demo", "when": "0 9 * * 1-5", "kind": "prompt"},
    )
    assert "Job #1" in made and "every weekday at 09:00" in made
    made = await call(
        fetch,
        "schedule",
        {"text": "stand up", "when": "in 1s", "kind": "reminder", "missed": "skip"},
    )
    assert "Reminder #2" in made
    assert "⏰ stand up" in await fetch.expect("⏰ stand up", timeout=10)
    listed = await call(fetch, "schedule_list", {})
    assert "#1" in listed and "#2" not in listed
    bad = await call(fetch, "schedule", {"text": "x", "when": "at 25:00", "kind": "reminder"})
    assert bad.startswith("error:") and "not a time of day" in bad
    assert "cancelled #1" in await call(fetch, "schedule_cancel", {"id": 1})
    assert "no job #1" in await call(fetch, "schedule_cancel", {"id": "#1"})
    assert await call(fetch, "send_message", {"text": "hello from the model"}) == "sent"
    assert "hello from the model" in await fetch.expect("hello from the model")


async def test_second_fetch_on_the_same_home_runs_without_scheduler(
    make_settings: Callable[..., Settings],
) -> None:
    settings = make_settings()
    first_app, first = await start_driver(settings)
    second_app, second = await start_driver(settings)
    try:
        first_scheduler, second_scheduler = first.services.scheduler, second.services.scheduler
        assert first_scheduler is not None and second_scheduler is not None
        assert first_scheduler.running
        assert not second_scheduler.running
        status = await second.ask("/status", "scheduler:")
        assert "not running here" in " ".join(status.split())
        refused = " ".join((await second.ask("/remind x in 5m", "⚠️")).split())
        assert "Scheduling is off in this Fetch" in refused and "pid" in refused
        assert "Reminder #1" in await first.ask("/remind x in 5m", "Reminder #")
        assert "#1" in await second.ask("/cron list", "scheduled")  # the list is shared
    finally:
        await second_app.__aexit__(None, None, None)
        await first_app.__aexit__(None, None, None)
