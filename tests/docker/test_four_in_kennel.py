"""All four coding CLIs inside the real kennel image, through the relay, against the
project's scripted fake of each wire protocol: the edit reaches the approval step."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable

import pytest

from kennel.relay import PLACEHOLDER_KEY
from orchestrator.config import Settings
from tests.conftest import Driver, git, start_driver
from tests.docker.conftest import CANARY
from tests.fakes.model_server import EditFile, ScriptedModelServer, Text

# harness -> (env for the provider's upstream, env for its key, credential header)
CLIS = {
    "claude-code": ("ANTHROPIC_BASE_URL", "", "ANTHROPIC_API_KEY", "x-api-key"),
    "gemini-cli": ("FETCH__PROVIDERS__GEMINI__BASE_URL", "", "GEMINI_API_KEY", "x-goog-api-key"),
    "codex": ("FETCH__PROVIDERS__OPENAI__BASE_URL", "/v1", "OPENAI_API_KEY", "authorization"),
    "copilot": ("FETCH__PROVIDERS__OPENAI__BASE_URL", "/v1", "OPENAI_API_KEY", "authorization"),
}


@pytest.fixture(params=sorted(CLIS))
async def in_kennel(
    request: pytest.FixtureRequest,
    kennel_image: str,
    model: ScriptedModelServer,
    make_settings: Callable[..., Settings],
) -> AsyncIterator[tuple[str, Driver]]:
    name: str = request.param
    url_env, suffix, key_env, _header = CLIS[name]
    settings = make_settings(
        FETCH_KENNEL="docker", FETCH_HARNESS=name, **{url_env: model.url + suffix, key_env: CANARY}
    )
    app, driver = await start_driver(settings)
    try:
        yield name, driver
    finally:
        await app.__aexit__(None, None, None)


async def test_each_cli_edits_in_the_kennel(
    in_kennel: tuple[str, Driver], model: ScriptedModelServer
) -> None:
    name, fetch = in_kennel
    repo = fetch.services.workspace.path("demo")
    model.script(
        EditFile("README.md", "Teh quick brown fox.", "The quick brown fox."),
        Text("Fixed the typo."),
    )
    diff = await fetch.ask("fix the typo in README.md of demo", "Apply?", 180)
    assert "+The quick" in diff and "README.md +1 −1" in diff
    await fetch.ask("yes", "Committed")
    assert "The quick brown fox." in (repo / "README.md").read_text()
    assert git(repo, "status", "--porcelain") == ""
    header = CLIS[name][3]
    turns = model.model_requests
    assert turns, "the CLI never reached the model"
    for request in turns:
        sent = request.headers.get(header, "").removeprefix("Bearer ")
        assert sent == CANARY, f"{name} call without the relay's key: {sent!r}"
        assert PLACEHOLDER_KEY not in json.dumps(request.headers)
    entries = [
        json.loads(x)
        for x in (fetch.services.settings.home_dir / "relay.jsonl").read_text().splitlines()
    ]
    assert any(e["harness"] == name and e["status"] == 200 for e in entries)
    rows = await fetch.services.store.db.conn.execute_fetchall(
        "SELECT harness, status, tokens_in FROM tasks"
    )
    assert [(r[0], r[1]) for r in rows] == [(name, "committed")]
