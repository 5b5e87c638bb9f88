"""Issue 13 in the real kennel image: the repository's tests run inside the container
(Node's there; Python is not, and the card says so), and /pause stops the task's process
tree inside the container until /resume."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kennel.docker_backend import DockerKennel
from orchestrator.config import Settings
from tests.conftest import Driver, hang_a_task, make_repo, start_driver, tree_snapshot
from tests.fakes.model_server import ScriptedModelServer

NODE_TEST = (
    "const test = require('node:test');\nconst assert = require('node:assert');\n"
    "test('adds', () => assert.strictEqual(1 + 1, 2));\n"
    "test('subtracts', () => assert.strictEqual(2 - 1, 1));\n"
)


async def _card(
    make_settings: Callable[..., Settings], workspace: Path, repo: str, files: dict[str, str]
) -> str:
    make_repo(workspace, repo, {"README.md": "# x\n\nTeh quick brown fox.\n", **files})
    app, fetch = await start_driver(make_settings(FETCH_KENNEL="docker"))
    try:
        card = await fetch.ask(f"fix the typo in README.md of {repo}", "Apply?", 180)
        await fetch.ask("no", "Discarded")
        return card
    finally:
        await app.__aexit__(None, None, None)


async def test_python_tests_run_in_the_container(
    kennel_image: str,
    make_settings: Callable[..., Settings],
    workspace: Path,
) -> None:
    card = await _card(
        make_settings,
        workspace,
        "calc",
        {
            "calc.py": "def add(a, b):\n    return a + b\n",
            "test_calc.py": "from calc import add\n\ndef test_add():\n    assert add(1, 2) == 3\n",
        },
    )
    # The image has Python and pytest (kennel/Dockerfile): the repo's tests run there.
    assert "🧪 1/1 passing (pytest, in the kennel)" in card, card


async def test_node_tests_run_in_the_container(
    kennel_image: str,
    make_settings: Callable[..., Settings],
    workspace: Path,
) -> None:
    card = await _card(
        make_settings,
        workspace,
        "nodeapp",
        {
            "package.json": '{"name": "nodeapp", "scripts": {"test": "node --test"}}\n',
            "test/math.test.js": NODE_TEST,
        },
    )
    assert "🧪 2/2 passing (npm test, in the kennel)" in card, card


def _states(container: Any) -> dict[str, str]:
    """args -> state of the task's live claude processes, as ps in the container sees."""
    out = container.exec_run(["ps", "-eo", "stat=,args="]).output.decode()
    found = {}
    for line in out.splitlines():
        stat, _, args = line.strip().partition(" ")
        # A zombie has ended already (only its exit status waits): nothing to stop.
        if "claude" in args and "ps -eo" not in args and not stat.startswith("Z"):
            found[args.strip()] = stat[:1]
    return found


async def test_pause_and_resume_in_the_container(
    docker_fetch: Driver, model: ScriptedModelServer
) -> None:
    repo, before = await hang_a_task(docker_fetch, model, timeout=90)
    kennel = docker_fetch.services.kennel
    assert isinstance(kennel, DockerKennel)
    (warm,) = kennel._warm.values()
    container = warm.container
    assert _states(container)
    await docker_fetch.ask("/pause", "Paused task")
    assert set(_states(container).values()) == {"T"}, _states(container)
    await docker_fetch.ask("/resume", "Resumed task")
    await asyncio.sleep(0.2)
    assert "T" not in set(_states(container).values()), _states(container)
    await docker_fetch.ask("/pause", "Paused task")
    stopped = await docker_fetch.ask("/stop", "Stopped", 15)
    assert "still alive" not in stopped
    assert not _states(container)
    assert tree_snapshot(repo) == before
