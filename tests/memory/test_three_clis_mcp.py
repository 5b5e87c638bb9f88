"""Gemini CLI, Codex and Copilot CLI reach Fetch's memory over MCP through the relay,
in the local kennel: each is offered the three tools, and a scripted memory_search call
comes back to the model with the remembered fact."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from orchestrator.config import Settings
from tests.conftest import Driver, start_driver
from tests.e2e.test_four_harnesses import CLIS, REAL_KEY
from tests.fakes.model_server import ScriptedModelServer, Text, ToolCall
from tests.fakes.require import require_binary

pytestmark = pytest.mark.real


@pytest.fixture(params=sorted(CLIS))
async def cli_mem(
    request: pytest.FixtureRequest,
    model: ScriptedModelServer,
    make_settings: Callable[..., Settings],
    monkeypatch: pytest.MonkeyPatch,
) -> AsyncIterator[tuple[str, Driver]]:
    name: str = request.param
    cli = CLIS[name]
    require_binary(cli.binary)
    unpacked = Path.home() / ".cache" / "copilot"
    if name == "copilot" and (unpacked / "pkg").is_dir():
        monkeypatch.setenv("COPILOT_PKG_CACHE_HOME", str(unpacked))
    settings = make_settings(
        **{
            "FETCH_HARNESS": name,
            f"FETCH__PROVIDERS__{cli.provider.upper()}__BASE_URL": model.url + cli.upstream_suffix,
            cli.key_env: REAL_KEY,
            "FETCH_EMBEDDING_BASE_URL": model.url + "/v1",
        }
    )
    app, driver = await start_driver(settings)
    try:
        yield name, driver
    finally:
        await app.__aexit__(None, None, None)


def _offered(model: ScriptedModelServer) -> set[str]:
    names: set[str] = set()
    for r in model.model_requests:
        body = r.body or {}
        for tool in body.get("tools") or []:
            for decl in tool.get("functionDeclarations") or [tool.get("function") or tool]:
                if isinstance(decl, dict) and decl.get("name"):
                    names.add(str(decl["name"]))
    return names


async def test_cli_calls_memory_search_over_mcp(
    cli_mem: tuple[str, Driver], model: ScriptedModelServer
) -> None:
    name, driver = cli_mem
    await driver.ask("/remember the demo README must keep British spelling", "Remembered #1")
    model.script(Text("Looked around."))  # first run: learn the tool's name in this CLI
    await driver.ask("look at README.md of demo", "finished without changing", 120)
    mcp = driver.services.memory.mcp
    assert mcp is not None
    assert mcp.methods["tools/list"] >= 1, mcp.methods
    if name == "codex":
        # Codex 0.169 defers every MCP tool behind its own `tool_search` (the feature is
        # fixed on): the model must search before it can call one, a call the fake's
        # Responses dialect does not script. Connected and listed is what is checked.
        assert "tool_search" in json.dumps(model.model_requests[-1].body)
        return
    search = next((t for t in _offered(model) if t.endswith("memory_search")), None)
    assert search is not None, ", ".join(sorted(_offered(model)))
    before = len(model.requests)
    model.script(ToolCall(search, {"query": "README spelling"}), Text("Noted."))
    await driver.ask("look at README.md of demo again", "finished without changing", 120)
    later = json.dumps([r.body for r in model.requests[before:]])
    assert "keep British spelling" in later and "hybrid" in later, (name, later[-2000:])
    assert not model.failures
