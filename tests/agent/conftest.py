"""The orchestrator agent end to end: the whole app through the terminal channel, the
planner on the real openai SDK against the scripted model server (real HTTP), real git.
What the model received is asserted on the wire (``bodies``)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest

from orchestrator.app import App
from orchestrator.config import Settings
from tests.conftest import Driver, start_driver
from tests.fakes.model_server import ScriptedModelServer

MODEL_ENV = {
    "FETCH_MODEL": "planner-1",
    "FETCH_MODEL_API_KEY": "sk-orch",
    "FETCH__MODEL__MAX_RETRIES": "0",
}


@pytest.fixture
async def model() -> AsyncIterator[ScriptedModelServer]:
    async with ScriptedModelServer() as srv:
        yield srv


@pytest.fixture
async def start(
    model: ScriptedModelServer, make_settings: Callable[..., Settings]
) -> AsyncIterator[Callable[..., Awaitable[Driver]]]:
    """``await start(**env)``: the app with a model (and any extra settings)."""
    apps: list[App] = []

    async def go(**env: str) -> Driver:
        settings = make_settings(FETCH_MODEL_BASE_URL=model.url + "/v1", **MODEL_ENV, **env)
        app, driver = await start_driver(settings)
        apps.append(app)
        return driver

    try:
        yield go
    finally:
        for app in apps:
            await app.__aexit__(None, None, None)


@pytest.fixture
async def agent(start: Callable[..., Awaitable[Driver]]) -> Driver:
    return await start()


def bodies(model: ScriptedModelServer) -> list[dict[str, Any]]:
    """The Chat Completions requests the server received, in order."""
    return [r.body for r in model.requests if r.dialect == "openai_chat" and r.body]


def tool_results(body: dict[str, Any]) -> dict[str, str]:
    """tool_call_id -> the result sent back, in one request."""
    return {m["tool_call_id"]: m["content"] for m in body["messages"] if m["role"] == "tool"}


def results_in_order(body: dict[str, Any]) -> list[str]:
    return [m["content"] for m in body["messages"] if m["role"] == "tool"]
