"""What the tests of a kennel on another engine share (tests/docker/test_remote_engine.py
over TLS, tests/docker/test_remote_ssh.py over ssh): Fetch driving the real Claude Code
there against a scripted model, and the demo typo task it runs."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from kennel.docker_backend import LABEL, install_id
from kennel.remote import RemoteDockerKennel
from orchestrator.config import Settings
from tests.conftest import Driver, git, start_driver
from tests.docker.conftest import CANARY
from tests.docker.remote_daemon import SecondEngine
from tests.fakes.model_server import EditFile, ScriptedModelServer, Text


def ours(client: Any, home: Path) -> list[Any]:
    """The containers of the install of ``home`` on the engine of ``client``."""
    return list(
        client.containers.list(all=True, filters={"label": f"{LABEL}.install={install_id(home)}"})
    )


@asynccontextmanager
async def fetch_there(
    make_settings: Callable[..., Settings], host: str, **more: str
) -> AsyncIterator[tuple[Driver, ScriptedModelServer]]:
    """Fetch with the Docker kennel on the engine at ``host`` and Claude Code on a
    scripted model, whose key is the canary."""
    async with ScriptedModelServer() as model:
        settings = make_settings(
            FETCH_KENNEL="docker",
            FETCH_HARNESS="claude-code",
            FETCH_DOCKER_HOST=host,
            ANTHROPIC_BASE_URL=model.url,
            ANTHROPIC_API_KEY=CANARY,
            **more,
        )
        app, driver = await start_driver(settings)
        try:
            yield driver, model
        finally:
            await app.__aexit__(None, None, None)


async def typo_there(
    driver: Driver,
    model: ScriptedModelServer,
    second_engine: SecondEngine,
    docker_client: Any,
    timeout: float,
    way: str,
) -> tuple[RemoteDockerKennel, Path, str, dict[str, Any]]:
    """The demo typo task, to its diff: it ran on the second engine, not this machine's.
    Returns the kennel, the repository, its commit before, and the container's attrs."""
    home = driver.services.settings.home_dir
    kennel = driver.services.kennel
    assert isinstance(kennel, RemoteDockerKennel)
    repo = driver.services.workspace.path("demo")
    original = git(repo, "rev-parse", "HEAD")
    model.script(EditFile("README.md", "Teh quick", "The quick"), Text("Fixed it."))
    started = time.monotonic()
    diff = await driver.ask("fix the typo in README.md of demo", "Apply?", timeout)
    print(f"\nremote task {way} to its diff: {time.monotonic() - started:.2f} s")
    assert "+The quick" in diff and "README.md +1 −1" in diff
    there = second_engine.client()
    try:
        (container,) = ours(there, home)
        attrs = dict(container.attrs)
        assert attrs["HostConfig"]["NetworkMode"] == "none"
    finally:
        there.close()
    assert ours(docker_client, home) == []
    return kennel, repo, original, attrs
