"""Docker fixtures: the real engine and the real kennel image, or a loud failure in CI."""

from __future__ import annotations

import os
import shutil
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any, NoReturn

import pytest

from orchestrator.config import Settings
from tests.conftest import Driver, start_driver
from tests.docker.remote_daemon import SecondEngine
from tests.fakes.model_server import ScriptedModelServer
from tests.fakes.require import missing

CANARY = "sk-ant-canary-docker-91b2"


def _missing(why: str) -> NoReturn:
    missing(f"{why} (.ci/kennel-image.sh)")


@pytest.fixture(scope="session")
def docker_client() -> Iterator[Any]:
    import docker
    import docker.errors

    try:
        client = docker.from_env(timeout=30)
        client.ping()
    except docker.errors.DockerException as err:
        _missing(f"no Docker engine ({err})")
    yield client
    client.close()


@pytest.fixture(scope="session")
def kennel_image(docker_client: Any) -> str:
    import docker.errors

    from kennel.build import image_tag

    tag = image_tag()
    try:
        docker_client.images.get(tag)
    except docker.errors.ImageNotFound:
        _missing(f"kennel image {tag} is not built")
    return tag


@pytest.fixture
async def model() -> AsyncIterator[ScriptedModelServer]:
    async with ScriptedModelServer() as srv:
        yield srv


@pytest.fixture
async def docker_fetch(
    kennel_image: str, model: ScriptedModelServer, make_settings: Callable[..., Settings]
) -> AsyncIterator[Driver]:
    settings = make_settings(
        FETCH_KENNEL="docker",
        FETCH_HARNESS="claude-code",
        ANTHROPIC_BASE_URL=model.url,
        ANTHROPIC_API_KEY=CANARY,
    )
    app, driver = await start_driver(settings)
    try:
        yield driver
    finally:
        await app.__aexit__(None, None, None)


@pytest.fixture(scope="session")
def second_engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SecondEngine]:
    """A second Docker engine (tests/docker/remote_daemon.py), one per session: the
    remote-kennel modules share it."""
    if os.geteuid() != 0:
        missing("a second Docker engine needs root")
    for binary in ("dockerd", "docker", "ip"):
        if shutil.which(binary) is None:
            missing(f"{binary!r} is not installed (a second Docker engine needs it)")
    engine = SecondEngine(tmp_path_factory.mktemp("engine2"))
    try:
        engine.start()
        yield engine
    finally:
        print(f"\nsecond engine: {engine.figures}")
        engine.stop()


@pytest.fixture(scope="session")
def with_image(second_engine: SecondEngine, kennel_image: str) -> SecondEngine:
    """The second engine, with the real kennel image copied in (once per session: about
    30 s)."""
    if "image_copy_s" not in second_engine.figures:
        second_engine.load_image(kennel_image)
    return second_engine
