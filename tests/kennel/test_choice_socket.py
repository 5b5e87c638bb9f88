"""kennel.backend auto asks this machine's Docker engine over its unix socket with two
plain requests (GET /_ping, GET /images/<name>/json), without the Docker library: what
it answers decides docker or bwrap, and the reason says why."""

from __future__ import annotations

import json
import os
import socketserver
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest

from kennel.choice import choose, docker_unusable
from kennel.settings import KennelSettings

ROOT = Path(__file__).resolve().parents[2]
ENGINE_SOCKET = "/var/run/docker.sock"


class _Engine(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True
    ping = 200
    images: frozenset[str] = frozenset()
    seen: list[str]


class _Handler(BaseHTTPRequestHandler):
    server: _Engine

    def do_GET(self) -> None:
        self.server.seen.append(self.path)
        if self.path == "/_ping":
            self._answer(self.server.ping, b"OK" if self.server.ping == 200 else b"broken")
        elif self.path.startswith("/images/") and self.path.endswith("/json"):
            name = self.path.removeprefix("/images/").removesuffix("/json")
            found = name in self.server.images
            body = json.dumps({"Id": "sha256:1"} if found else {"message": "no such image"})
            self._answer(200 if found else 404, body.encode())
        else:
            self._answer(400, b"?")

    def _answer(self, status: int, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def engine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[_Engine]:
    path = tmp_path / "engine.sock"
    server = _Engine(str(path), _Handler)
    server.seen = []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    monkeypatch.setenv("DOCKER_HOST", f"unix://{path}")
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


def test_an_engine_with_the_image_is_docker(engine: _Engine) -> None:
    engine.images = frozenset({"fetch-kennel:abc"})
    choice = choose(KennelSettings(docker={"image": "fetch-kennel:abc"}))
    assert choice.backend == "docker", choice.reason
    assert engine.seen == ["/_ping", "/images/fetch-kennel:abc/json"]


def test_a_missing_image_says_how_to_build_it(engine: _Engine) -> None:
    why = docker_unusable("fetch-kennel:abc")
    assert why == "kennel image fetch-kennel:abc is not built (python -m kennel.build)"
    choice = choose(KennelSettings(docker={"image": "fetch-kennel:abc"}))
    assert choice.backend == "bwrap"
    assert choice.reason == f"auto → bwrap: {why}"


def test_an_engine_that_fails_its_ping_is_not_answering(engine: _Engine) -> None:
    engine.ping = 500
    engine.images = frozenset({"fetch-kennel:abc"})
    why = docker_unusable("fetch-kennel:abc")
    assert why == "docker engine not answering (/_ping: HTTP 500 broken)"


def test_a_socket_that_closes_at_once_is_not_answering(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    class Mute(socketserver.BaseRequestHandler):
        def handle(self) -> None:
            pass  # closes without a word

    path = tmp_path / "mute.sock"
    server = socketserver.UnixStreamServer(str(path), Mute)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    monkeypatch.setenv("DOCKER_HOST", f"unix://{path}")
    try:
        why = docker_unusable("fetch-kennel:abc", timeout=2)
    finally:
        server.shutdown()
        server.server_close()
    assert why is not None and why.startswith("docker engine not answering ("), why


@pytest.mark.skipif(not os.path.exists(ENGINE_SOCKET), reason="no Docker engine here")
def test_the_real_engine_is_asked_without_the_docker_library(tmp_path: Path) -> None:
    """This machine's engine: its kennel image found, a missing one named, and the Docker
    library never imported (a fresh interpreter: the honest view of sys.modules)."""
    env = {k: v for k, v in os.environ.items() if k != "DOCKER_HOST"}
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    code = (
        "import json, sys\n"
        "from kennel.choice import docker_unusable, docker_image\n"
        "from kennel.settings import KennelSettings\n"
        "print(json.dumps([docker_unusable(docker_image(KennelSettings())),\n"
        "    docker_unusable('fetch-no-such-image:nope'), 'docker' in sys.modules]))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=env
    )
    assert done.returncode == 0, done.stderr[-2000:]
    ours, missing, imported = json.loads(done.stdout.strip().splitlines()[-1])
    assert missing == "kennel image fetch-no-such-image:nope is not built (python -m kennel.build)"
    assert imported is False
    # The kennel image may not be built on this machine; when it is, it is found.
    assert ours is None or ours.endswith("is not built (python -m kennel.build)"), ours
