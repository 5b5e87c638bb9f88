"""Steering under the Docker kennel (issue 23, 4): a message sent while the real Claude
Code runs in the real kennel image reaches the scripted model's next request (the exec's
stdin, kennel/docker_backend.py), the owner hears "📨 passed to claude-code", and /stop
still ends a run whose stdin is held open."""

from __future__ import annotations

import json

from tests.conftest import Driver
from tests.docker.test_docker_loop import _kennel_container, _ps
from tests.fakes.model_server import Delay, EditFile, Hang, ScriptedModelServer, Text

STEER = "also: use British spelling"


def _carrying(model: ScriptedModelServer, text: str) -> list[int]:
    return [i for i, r in enumerate(model.model_requests) if text in json.dumps(r.body)]


async def test_a_message_mid_run_reaches_claude_in_the_container(
    docker_fetch: Driver, model: ScriptedModelServer
) -> None:
    # The first answer is held until the message is written: it is taken mid-run.
    model.script(
        Delay(4.0, EditFile("README.md", "Teh quick", "The quick")),
        Text("Fixed, and noted the spelling."),
    )
    await docker_fetch.ask("fix the typo in README.md of demo", "On it", 60)
    await model.wait_for_requests(1, timeout=120)
    await docker_fetch.push(STEER)
    assert "(task #" in await docker_fetch.expect("📨 passed to claude-code", 20)
    card = await docker_fetch.expect("Apply?", 120)
    assert "+The quick" in card and "noted the spelling" in card
    carried = _carrying(model, STEER)
    assert carried and carried[0] > 0  # a later request than the first: mid-run
    assert len(model.model_requests) == 3  # taken within the task's turn
    await docker_fetch.ask("no", "Discarded")
    assert not [m for m in await docker_fetch.quiet(0.5) if "📥" in m]


async def test_stop_ends_a_steered_run_in_the_container(
    docker_fetch: Driver, model: ScriptedModelServer
) -> None:
    model.script(Hang(120))
    await docker_fetch.ask("fix the typo in README.md of demo", "On it", 60)
    await model.wait_for_requests(1, timeout=120)
    await docker_fetch.push("and keep it short")
    await docker_fetch.expect("📨 passed to claude-code", 20)
    reply = await docker_fetch.ask("/stop", "Stopped", 15)
    assert "still alive" not in reply
    left = _ps(_kennel_container(docker_fetch))
    assert not any("claude" in p for p in left), left
