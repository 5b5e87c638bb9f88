"""Container faults mid-task, told and recovered (issue 21, 2): a kennel OOM-killed and an
engine that stops end the task with one clear line, the session is ALERT again, and the
next task runs in a new kennel. (A kennel that vanishes: test_docker_loop.py.)

The engine that stops is a proxy of the test's own in front of the real engine's socket
(tests/docker/engine_proxy.py): the shared engine and other tests' kennels never stop."""

from __future__ import annotations

import asyncio
import gc
import warnings
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from kennel.docker_backend import DockerKennel
from orchestrator.config import Settings
from tests.conftest import Driver, git, hang_a_task, start_driver, tree_snapshot
from tests.docker.conftest import CANARY
from tests.docker.engine_proxy import EngineProxy
from tests.fakes.model_server import EditFile, ScriptedModelServer, Text


def _container_id(driver: Driver) -> str:
    kennel = driver.services.kennel
    assert isinstance(kennel, DockerKennel)
    (warm,) = kennel._warm.values()
    return str(warm.container.id)


def _failed_line(text: str) -> str:
    """The failure, one sentence (the phone wraps it: joined again here)."""
    assert "Traceback" not in text
    first = text.split("\n\n")[0] if "is unchanged" not in text else text.split("is unchanged")[0]
    return " ".join(first.split())


@pytest.fixture
async def driver_on(
    kennel_image: str, model: ScriptedModelServer, make_settings: Callable[..., Settings]
) -> AsyncIterator[Callable[..., Any]]:
    apps: list[Any] = []

    async def start(**env: str) -> Driver:
        """A Fetch on the Docker kennel; the fixture closes it unless the test did."""
        settings = make_settings(
            FETCH_KENNEL="docker",
            FETCH_HARNESS="claude-code",
            ANTHROPIC_BASE_URL=model.url,
            ANTHROPIC_API_KEY=CANARY,
            **env,
        )
        app, driver = await start_driver(settings)
        apps.append(app)
        return driver

    yield start
    while apps:
        await apps.pop().__aexit__(None, None, None)


async def _next_task_in_a_new_kennel(
    fetch: Driver, model: ScriptedModelServer, old: str, docker_client: Any
) -> None:
    model.script(EditFile("README.md", "Teh quick", "The quick"), Text("Fixed it."))
    diff = await fetch.ask("fix the typo in README.md of demo", "Apply?", 120)
    assert "+The quick" in diff
    assert _container_id(fetch) != old
    assert not docker_client.containers.list(all=True, filters={"id": old}), "old kennel left"
    await fetch.ask("yes", "Committed")


async def test_an_engine_that_stops_mid_task_is_told_and_the_next_task_gets_a_new_kennel(
    driver_on: Callable[..., Any],
    model: ScriptedModelServer,
    docker_client: Any,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    engine = EngineProxy(tmp_path / "engine.sock")
    engine.start()
    monkeypatch.setenv("DOCKER_HOST", engine.url)
    try:
        fetch = await driver_on()
        repo, before = await hang_a_task(fetch, model, timeout=90)
        old = _container_id(fetch)
        engine.stop()
        failed = await fetch.expect("failed", 60)
        line = _failed_line(failed)
        assert "Task #1 failed" in line and "Docker engine stopped answering" in line, failed
        assert "Traceback" not in failed
        assert "ALERT" in await fetch.ask("/status", "Fetch ·")
        assert tree_snapshot(repo) == before
        # While the engine is away, a task is one line too, and nothing hangs.
        refused = await fetch.ask("fix the typo in README.md of demo", "failed", 60)
        assert "Docker engine" in _failed_line(refused), refused
        assert "ALERT" in await fetch.ask("/status", "Fetch ·")
        engine.start()  # the engine is back
        await _next_task_in_a_new_kennel(fetch, model, old, docker_client)
        assert "The quick" in (repo / "README.md").read_text()
    finally:
        await fetch.app.__aexit__(None, None, None)
        engine.close()
        # Closing Fetch removed every kennel it started, the one made after the engine
        # came back included (none is left running with the workspace mounted).
        mine = {"label": f"fetch.kennel.home={tmp_path / 'home'}"}
        left = docker_client.containers.list(all=True, filters=mine)
        for container in left:
            container.remove(force=True)
        assert not left, [c.name for c in left]
        # The Docker SDK (urllib3) drops, unclosed, a connection the engine hung up on; the
        # collector's ResourceWarning for it is the library's: collected here, ignored.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ResourceWarning)
            for _ in range(3):
                gc.collect()
                await asyncio.sleep(0.2)


async def test_an_oom_killed_kennel_is_told_and_the_next_task_gets_a_new_kennel(
    driver_on: Callable[..., Any], model: ScriptedModelServer, docker_client: Any
) -> None:
    """Under a 96 MB limit Claude Code (Node, ~150 MB) is killed by the kernel's OOM
    killer as it starts (the CLI is its first choice: kennel/docker_backend.py), while the
    kennel's forwarder lives on."""
    fetch = await driver_on(FETCH__KENNEL__DOCKER__MEMORY="96m")
    repo = fetch.services.workspace.path("demo")
    base = git(repo, "rev-parse", "HEAD")
    before = tree_snapshot(repo)
    model.script(EditFile("README.md", "Teh quick", "The quick"), Text("Fixed it."))
    failed = await fetch.ask("fix the typo in README.md of demo", "failed", 120)
    line = _failed_line(failed)
    assert "Task #1 failed" in line and "memory limit" in line, failed
    assert "ALERT" in await fetch.ask("/status", "Fetch ·")
    assert tree_snapshot(repo) == before and git(repo, "rev-parse", "HEAD") == base
    old = _container_id(fetch)
    attrs = docker_client.containers.get(old).attrs
    assert attrs["HostConfig"]["Memory"] == 96 * 1024 * 1024
    # The next task starts in a new kennel (under the same limit it fails the same way).
    again = await fetch.ask("fix the typo in README.md of demo", "failed", 120)
    assert "memory limit" in _failed_line(again), again
    assert _container_id(fetch) != old
    assert not docker_client.containers.list(all=True, filters={"id": old}), "old kennel left"
    assert "ALERT" in await fetch.ask("/status", "Fetch ·")
