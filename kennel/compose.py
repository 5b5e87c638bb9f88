"""The kennel image of a Docker Compose install: ``kennel.docker.image: compose``.

docker-compose.yml names no image: Compose names what it builds after the project
(``<project>_kennel``, ``<project>-kennel``), so two installs on one engine never share
or overwrite an image, and ``up --build`` (or ``pull_policy: build``) rebuilds what
changed. Fetch finds its kennel image through the labels Compose puts on containers:
its own container's project, then that project's ``kennel`` service container (which
``up`` ran to completion) and the image it was made from. Asked again for each new
kennel container, so a rebuilt image is used without restarting Fetch.
"""

from __future__ import annotations

import socket
from typing import Any

from core.errors import KennelError

MARK = "compose"
PROJECT = "com.docker.compose.project"
SERVICE = "com.docker.compose.service"


def compose_image(client: Any, service: str = "kennel") -> str:
    """The id of the image this Compose project's ``service`` container was made from."""
    import docker.errors

    try:
        me = client.containers.get(socket.gethostname())
    except docker.errors.NotFound:
        raise KennelError(
            "kennel.docker.image is 'compose', but Fetch does not run in a container of "
            "this engine (its hostname names none): set FETCH_KENNEL_IMAGE"
        ) from None
    project = (me.labels or {}).get(PROJECT, "")
    if not project:
        raise KennelError(
            "kennel.docker.image is 'compose', but Fetch's container is not part of a "
            "Compose project: set FETCH_KENNEL_IMAGE"
        )
    found = client.containers.list(
        all=True, filters={"label": [f"{PROJECT}={project}", f"{SERVICE}={service}"]}
    )
    if not found:
        raise KennelError(
            f"the Compose project {project} has no {service} service container: "
            "`docker compose up -d` builds and runs it first"
        )
    return str(found[0].attrs.get("Image") or found[0].image.id)


__all__ = ["MARK", "compose_image"]
