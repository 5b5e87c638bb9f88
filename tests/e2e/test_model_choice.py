"""/model through real parts (issue 23): the orchestrator's chain is two scripted model
servers; the chat's choice sends its turns to the chosen entry first, survives a restart
(SQLite), and /status shows it. A CLI's choice reaches the real Claude Code's requests."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from orchestrator.config import Settings
from tests.conftest import start_driver
from tests.fakes.model_server import EditFile, ScriptedModelServer, Text
from tests.fakes.require import require_binary


@pytest.fixture
async def servers() -> AsyncIterator[tuple[ScriptedModelServer, ScriptedModelServer]]:
    async with ScriptedModelServer() as first, ScriptedModelServer() as second:
        yield first, second


def _chain(home: Path, first: str, second: str) -> None:
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.yaml").write_text(
        "model:\n  name: house-model\n  providers:\n"
        f"    - {{name: cloud, base_url: '{first}/v1', api_key: sk-a}}\n"
        f"    - {{name: local, base_url: '{second}/v1', model: qwen2.5}}\n"
    )


async def test_the_chosen_orchestrator_model_answers_and_survives_a_restart(
    make_settings: Callable[..., Settings],
    tmp_path: Path,
    servers: tuple[ScriptedModelServer, ScriptedModelServer],
) -> None:
    cloud, local = servers
    _chain(tmp_path / "home", cloud.url, local.url)
    settings = make_settings()
    app, fetch = await start_driver(settings)
    try:
        listing = await fetch.ask("/model", "Models for this chat")
        assert "▶ house-model on cloud" in listing and "• qwen2.5 on local" in listing
        await fetch.ask("/model qwen2.5", "now uses qwen2.5 on local")
        local.script(Text("answered by the local model"))
        await fetch.ask("what does this repo do?", "answered by the local model")
        assert [r.body["model"] for r in local.model_requests if r.body] == ["qwen2.5"]
        assert cloud.model_requests == []
    finally:
        await app.__aexit__(None, None, None)
    app, fetch = await start_driver(make_settings())  # the same home: a restart
    try:
        status = await fetch.ask("/status", "Fetch ·")
        assert "model: qwen2.5 on local (/model)" in status
        local.script(Text("still local"))
        await fetch.ask("and the tests?", "still local")
        assert cloud.model_requests == []
        await fetch.ask("/model default", "configured order")
        cloud.script(Text("the cloud again"))
        await fetch.ask("and now?", "the cloud again")
        assert "model: house-model on cloud" in await fetch.ask("/status", "Fetch ·")
    finally:
        await app.__aexit__(None, None, None)


@pytest.mark.real
async def test_a_cli_model_chosen_by_phone_reaches_claude_code(
    make_settings: Callable[..., Settings],
    servers: tuple[ScriptedModelServer, ScriptedModelServer],
) -> None:
    require_binary("claude")
    model, _ = servers
    settings = make_settings(
        FETCH_HARNESS="claude-code", ANTHROPIC_BASE_URL=model.url, ANTHROPIC_API_KEY="sk-ant-x"
    )
    app, fetch = await start_driver(settings)
    try:
        await fetch.ask("/model claude-code claude-haiku-4-5", "now use claude-haiku-4-5")
        assert "· model claude-haiku-4-5" in await fetch.ask("/status", "Fetch ·")
        repo = fetch.services.workspace.path("demo")
        model.script(EditFile(str(repo / "README.md"), "Teh quick", "The quick"), Text("Fixed."))
        await fetch.ask("fix the typo in README.md of demo", "Apply?", 90)
        sent = {r.body.get("model") for r in model.model_requests if r.body}
        assert sent == {"claude-haiku-4-5"}
    finally:
        await app.__aexit__(None, None, None)
