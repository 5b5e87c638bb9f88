"""Steering codex under the Docker kennel (issue 23, 4): the real codex in the real
kennel image runs as its app server (harnesses/codex_driver.py, run by the image's
python3); a message sent while its first model request is held reaches it as
``turn/steer`` over the exec's stdin: "📨 passed to codex", the held request is dropped and
the next one carries the text; /stop still ends a steered run."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable

import pytest

from orchestrator.config import Settings
from tests.conftest import Driver, start_driver
from tests.docker.conftest import CANARY
from tests.docker.test_docker_loop import _kennel_container, _ps
from tests.fakes.model_server import EditFile, Hang, ScriptedModelServer, Text

STEER = "also: use British spelling"


@pytest.fixture
async def codex_fetch(
    kennel_image: str, model: ScriptedModelServer, make_settings: Callable[..., Settings]
) -> AsyncIterator[Driver]:
    settings = make_settings(
        FETCH_KENNEL="docker",
        FETCH_HARNESS="codex",
        FETCH__PROVIDERS__OPENAI__BASE_URL=model.url + "/v1",
        OPENAI_API_KEY=CANARY,
    )
    app, driver = await start_driver(settings)
    try:
        yield driver
    finally:
        await app.__aexit__(None, None, None)


def _carrying(model: ScriptedModelServer, text: str) -> list[int]:
    return [i for i, r in enumerate(model.model_requests) if text in json.dumps(r.body)]


async def test_a_message_mid_run_reaches_codex_in_the_container(
    codex_fetch: Driver, model: ScriptedModelServer
) -> None:
    model.script(
        Hang(180, after_headers=True),  # held until the steer comes
        EditFile("README.md", "Teh quick brown fox.", "The quick brown fox."),
        Text("Fixed, and noted the spelling."),
    )
    await codex_fetch.ask("fix the typo in README.md of demo", "On it", 60)
    await model.wait_for_requests(1, timeout=120)
    await codex_fetch.push(STEER)
    assert "(task #" in await codex_fetch.expect("📨 passed to codex", 20)
    assert await model.wait_for_disconnects(1, timeout=30) == [0]
    card = await codex_fetch.expect("Apply?", 120)
    assert "+The quick" in card and "noted the spelling" in card
    assert _carrying(model, STEER)[0] == 1
    assert len(model.model_requests) == 3 and not model.pending
    await codex_fetch.ask("no", "Discarded")
    assert not [m for m in await codex_fetch.quiet(0.5) if "📥" in m or "📭" in m]


async def test_stop_ends_a_steered_codex_in_the_container(
    codex_fetch: Driver, model: ScriptedModelServer
) -> None:
    model.script(Hang(120))
    await codex_fetch.ask("fix the typo in README.md of demo", "On it", 60)
    await model.wait_for_requests(1, timeout=120)
    await codex_fetch.push("and keep it short")
    await codex_fetch.expect("📨 passed to codex", 20)
    reply = await codex_fetch.ask("/stop", "Stopped", 15)
    assert "still alive" not in reply
    left = _ps(_kennel_container(codex_fetch))
    assert not any("codex" in p for p in left), left
