"""Two Fetches on one Docker engine (every Compose deployment has the same FETCH_HOME
path) never name or remove each other's kennels, and a kennel a killed Fetch left is
removed before the next one starts."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

import docker.errors

from kennel.docker_backend import LABEL, DockerKennel, install_id
from kennel.settings import DockerKennelSettings


def _idle(client: Any, image: str, install: str) -> Any:
    return client.containers.run(
        image,
        ["sleep", "300"],
        detach=True,
        network_mode="none",
        labels={LABEL: "1", f"{LABEL}.install": install},
    )


def test_installs_keep_to_their_own_kennels(
    docker_client: Any, kennel_image: str, tmp_path: Path
) -> None:
    # The same FETCH_HOME path twice (two Compose deployments): two installs all the same.
    first_home, second_home = tmp_path / "one" / "home", tmp_path / "two" / "home"
    first = DockerKennel(first_home, DockerKennelSettings(), kennel_image, client=docker_client)
    second = DockerKennel(second_home, DockerKennelSettings(), kennel_image, client=docker_client)
    runs = Path("/srv/fetch/runs/demo-1234abcd")
    assert install_id(first_home) != install_id(second_home)
    assert install_id(first_home) == install_id(first_home)  # kept, not made anew
    assert first._container_name(runs) != second._container_name(runs)
    mine = _idle(docker_client, kennel_image, install_id(first_home))
    theirs = _idle(docker_client, kennel_image, install_id(second_home))
    try:
        first._sweep_leftovers()
        try:
            docker_client.containers.get(mine.id)
            raise AssertionError("the leftover of this install is still there")
        except docker.errors.NotFound:
            pass
        theirs.reload()
        assert theirs.status == "running"  # another install's kennel is left alone
    finally:
        for container in (mine, theirs):
            with contextlib.suppress(docker.errors.NotFound):
                container.remove(force=True)
