"""The archive a remote kennel's run comes back in (kennel/remote.py ``_fetch``), cut at
its cap: a kennel leaves a sparse file far bigger than its volume (``truncate -s``: no
space used, every byte of it streamed), Fetch refuses the archive at the cap, and must
then let go of the engine's stream. Left open, the engine stayed stuck writing it and
removing the container (a replaced kennel, Fetch's close) hung past a minute.

Real engine (the local one: get_archive is the same API on any engine), the kennel
image, a real container; nothing else of Fetch's runs."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from contextlib import suppress
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from core.errors import TreeRefused
from kennel.remote import RemoteDockerKennel
from kennel.remote_engine import Engine
from kennel.settings import DockerKennelSettings
from orchestrator.boundary.remote_files import RemoteFiles
from tests.fakes.require import missing

pytestmark = pytest.mark.real

LOCAL = "unix:///var/run/docker.sock"


@pytest.fixture(scope="module")
def engine_client() -> Iterator[Any]:
    try:
        import docker
        import docker.errors
    except ImportError:
        missing("the docker SDK is not installed")
    try:
        client = docker.DockerClient(base_url=LOCAL, timeout=20)
        client.ping()
    except docker.errors.DockerException as err:
        missing(f"no Docker engine at {LOCAL} ({err})")
    yield client
    client.close()


@pytest.fixture(scope="module")
def image(engine_client: Any) -> str:
    import docker.errors

    from kennel.build import image_tag

    tag = image_tag()
    try:
        engine_client.images.get(tag)
    except docker.errors.ImageNotFound:
        missing(f"kennel image {tag} is not built (.ci/kennel-image.sh)")
    return tag


async def test_an_archive_over_its_cap_is_let_go_of(
    engine_client: Any, image: str, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    run = home / "runs" / "run-1"
    (run / "tree").mkdir(parents=True)
    container = engine_client.containers.run(
        image,
        [
            "sh",
            "-c",
            "mkdir -p /runs/run-1/tree && truncate -s 8G /runs/run-1/tree/big && exec sleep 300",
        ],
        user="0:0",
        detach=True,
        network_disabled=True,
        labels={"fetch-test": "hostile-archive"},
    )
    try:
        kennel = RemoteDockerKennel(
            home,
            DockerKennelSettings(runs_size="16m"),
            image,
            Engine(LOCAL),
            client=engine_client,
            files=RemoteFiles(home),
        )
        await asyncio.sleep(1)
        warm = SimpleNamespace(container=container)
        with pytest.raises(TreeRefused, match="over 16 MB") as refused:
            await asyncio.to_thread(kennel._fetch, warm, run, "tree")  # type: ignore[arg-type]
        # As in Fetch: the refusal is still being handled (said, logged) meanwhile.
        started = time.monotonic()
        await asyncio.to_thread(container.remove, force=True)
        took = time.monotonic() - started
        assert refused.value is not None
        assert took < 10, f"removing the container took {took:.0f} s"
    finally:
        with suppress(Exception):  # gone already, as it should be
            await asyncio.to_thread(container.remove, force=True)
