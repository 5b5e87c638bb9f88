"""A real Claude Code's question mid-task, answered from the phone, resumes the same CLI
session on both kennels: its transcript comes back after each turn as data and is put in
the next turn's fresh state folder (orchestrator/boundary/layer.py)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable

import pytest

from orchestrator.config import Settings
from tests.conftest import Driver, git, start_driver, tree_snapshot
from tests.fakes.model_server import EditFile, ScriptedModelServer, Text
from tests.fakes.require import require_binary

QUESTION = "Which word should replace Teh: The or A?"


@pytest.fixture
async def model() -> AsyncIterator[ScriptedModelServer]:
    async with ScriptedModelServer() as srv:
        yield srv


@pytest.fixture(params=["bwrap", "docker"])
async def claude(
    request: pytest.FixtureRequest,
    model: ScriptedModelServer,
    make_settings: Callable[..., Settings],
) -> AsyncIterator[Driver]:
    require_binary("claude")
    if request.param == "docker":
        request.getfixturevalue("kennel_image")
    settings = make_settings(
        FETCH_KENNEL=request.param,
        FETCH_HARNESS="claude-code",
        ANTHROPIC_BASE_URL=model.url,
        ANTHROPIC_API_KEY="sk-ant-real-key-for-the-question-test",
    )
    app, driver = await start_driver(settings)
    try:
        yield driver
    finally:
        await app.__aexit__(None, None, None)


async def test_the_answer_resumes_the_real_cli_session(
    claude: Driver, model: ScriptedModelServer
) -> None:
    repo = claude.services.workspace.path("demo")
    base = git(repo, "rev-parse", "HEAD")
    before = tree_snapshot(repo)
    model.script(Text(QUESTION))
    asked = await claude.ask("fix the typo in README.md of demo", "asks", 120)
    assert QUESTION in asked
    assert tree_snapshot(repo) == before
    # The CLI may still send a late side request of its first turn: let it land first,
    # so it cannot take the answer turn's scripted steps.
    seen = -1
    while seen != len(model.requests):
        seen = len(model.requests)
        await asyncio.sleep(1.0)
    first = len(model.model_requests)
    model.script(EditFile("README.md", "Teh quick", "The quick"), Text("Used your word."))
    await claude.ask("The", "Passed your answer")
    card = await claude.expect("Apply?", 120)
    assert "+The quick" in card
    # The resumed turn carried the first turn's conversation: the CLI found its session.
    later = model.model_requests[first:]
    assert later and any(QUESTION in json.dumps(r.body) for r in later), "not resumed"
    await claude.ask("yes", "Committed")
    assert git(repo, "rev-parse", "HEAD^") == base
