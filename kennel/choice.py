"""Which backend runs the CLIs, and why: ``kennel.backend: auto`` picks Docker when its
engine answers and the kennel image is there, else the bwrap sandbox. It never falls back
to the unsafe namespace-only mode: that takes ``backend: unsafe-local``, said in full.

``auto`` does not build the image at start (two minutes and the npm registry); ``fetch
doctor`` says how to build it, and the next start picks Docker.
"""

from __future__ import annotations

import http.client
import os
import socket
from dataclasses import dataclass
from urllib.parse import quote

from core.errors import KennelError
from kennel.remote_engine import Engine, is_remote
from kennel.settings import KennelSettings


@dataclass(frozen=True, slots=True)
class Choice:
    backend: str  # "docker", "bwrap" or "unsafe-local"
    reason: str  # one line for `fetch doctor`


COMPOSE = "compose"  # kennel/compose.py: the Compose project's own kennel image


def docker_image(settings: KennelSettings) -> str:
    from kennel.build import image_tag

    return image_tag() if settings.docker.image == "auto" else settings.docker.image


def docker_unusable(image: str, timeout: float = 3.0, engine: Engine | None = None) -> str | None:
    """None if the engine (``engine``: another one, kennel.docker.host) answers and has
    ``image``, else why not."""
    if engine is None:
        docker_host = os.environ.get("DOCKER_HOST", "")
        unreachable = _unix_socket_unreachable(docker_host, timeout)
        if unreachable is not None:
            return f"docker engine not answering ({unreachable})"
        if image != COMPOSE and _is_unix(docker_host):
            # This machine's engine on its socket: two plain requests answer it, without
            # importing the Docker library (~0.2 s of CPU and 8 MiB at every start).
            return _unix_engine_unusable(_socket_path(docker_host), image, timeout)
    import docker
    import docker.errors

    try:
        # A fixed API version: "auto" asks the engine inside the constructor, where a
        # failure cannot be cleaned up. The ping below asks instead.
        if engine is not None:
            client = engine.client(timeout)
        else:
            client = docker.from_env(timeout=timeout, version="1.24")
    except docker.errors.DockerException as err:
        return f"docker engine not answering ({_short(err)})"
    try:
        client.ping()
        if image == COMPOSE:
            from kennel.compose import compose_image

            image = compose_image(client)
        client.images.get(image)
    except docker.errors.ImageNotFound:
        if engine is not None:
            from kennel.remote import missing_image

            return missing_image(image, engine)
        return f"kennel image {image} is not built (python -m kennel.build)"
    except docker.errors.DockerException as err:
        return f"docker engine not answering ({_short(err)})"
    except KennelError as err:
        return str(err)
    except OSError as err:
        return f"docker engine not answering ({_short(err)})"
    finally:
        client.close()
    return None


def remote_engine(settings: KennelSettings) -> Engine | None:
    """The other engine ``kennel.docker.host`` names (None: this machine's own);
    ``KennelError`` when the setting is wrong."""
    d = settings.docker
    return Engine.parse(str(d.host), d.cert_path, d.tls_verify) if is_remote(d.host) else None


def choose(settings: KennelSettings) -> Choice:
    backend = settings.backend
    engine = remote_engine(settings) if backend in ("docker", "auto") else None
    where = f" on the engine at {engine.describe()}" if engine is not None else ""
    if backend == "docker":
        return Choice("docker", f"kennel.backend: docker{where}")
    if backend == "bwrap":
        return Choice("bwrap", "kennel.backend: bwrap")
    if backend == "local":
        return Choice("bwrap", "kennel.backend: local (the bwrap sandbox)")
    if backend == "unsafe-local":
        return Choice("unsafe-local", "kennel.backend: unsafe-local (chosen explicitly)")
    image = docker_image(settings)
    why = docker_unusable(image, engine=engine)
    if why is None:
        return Choice("docker", f"auto → docker: engine answers{where}, image {image} is there")
    return Choice("bwrap", f"auto → bwrap: {why}")


def _is_unix(docker_host: str) -> bool:
    return not docker_host or docker_host.startswith("unix://")


def _socket_path(docker_host: str) -> str:
    return docker_host.removeprefix("unix://") or "/var/run/docker.sock"


class _UnixConnection(http.client.HTTPConnection):
    """HTTP over the engine's unix socket (what the Docker library does, in stdlib)."""

    def __init__(self, path: str, timeout: float) -> None:
        super().__init__("localhost", timeout=timeout)
        self._path = path

    def connect(self) -> None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(self.timeout)
        try:
            sock.connect(self._path)
        except OSError:
            sock.close()
            raise
        self.sock = sock


def _unix_engine_unusable(path: str, image: str, timeout: float) -> str | None:
    """The engine's API asked directly: GET /_ping, then GET /images/<image>/json."""
    conn = _UnixConnection(path, timeout)
    try:
        status, body = _get(conn, "/_ping")
        if status != 200:
            return f"docker engine not answering (/_ping: HTTP {status} {_short(body)})"
        status, body = _get(conn, f"/images/{quote(image, safe=':/@')}/json")
    except (OSError, http.client.HTTPException) as err:
        return f"docker engine not answering ({_short(err)})"
    finally:
        conn.close()
    if status == 404:
        return f"kennel image {image} is not built (python -m kennel.build)"
    if status != 200:
        return f"docker engine not answering (image {image}: HTTP {status} {_short(body)})"
    return None


def _get(conn: http.client.HTTPConnection, path: str) -> tuple[int, str]:
    conn.request("GET", path)
    answer = conn.getresponse()
    body = answer.read(4096).decode("utf-8", "replace")
    answer.read()  # the rest (an image's inspect is a few KB), so the connection is reusable
    return answer.status, body


def _unix_socket_unreachable(docker_host: str, timeout: float) -> str | None:
    """Try the engine's unix socket ourselves first: the Docker library leaks its socket
    when the connect fails. None: reachable, or not a unix socket (the library decides)."""
    if not _is_unix(docker_host):
        return None
    path = _socket_path(docker_host)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(timeout)
        try:
            sock.connect(path)
        except OSError as err:
            return f"{path}: {err.strerror or err}"
    return None


def _short(err: BaseException | str) -> str:
    text = " ".join(str(err).split())
    return text if len(text) <= 160 else text[:157] + "..."


__all__ = ["Choice", "choose", "docker_image", "docker_unusable", "remote_engine"]
