"""Docker Compose (Debian's docker-compose 1.29): config, a real `up` of the locally built
images, a /status round trip through the signed webhook, `down`."""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import shutil
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.docker.conftest import _missing

ROOT = Path(__file__).resolve().parents[2]
SECRET = "compose-test-secret-0123456789"


def _image(script: list[str]) -> str:
    out = subprocess.run(script, capture_output=True, text=True, cwd=ROOT)
    return out.stdout.strip().splitlines()[-1] if out.returncode == 0 and out.stdout else ""


@pytest.fixture
def compose(kennel_image: str, docker_client: Any, tmp_path: Path) -> Iterator[dict[str, str]]:
    binary = shutil.which("docker-compose")
    if binary is None:
        _missing("docker-compose is not installed")
    orchestrator = _image(["python3", ".ci/orchestrator_image.py", "--print-tag"])
    try:
        docker_client.images.get(orchestrator)
    except Exception:
        _missing(f"orchestrator image {orchestrator} is not built (.ci/orchestrator_image.py)")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env_file = tmp_path / "fetch.env"
    env_file.write_text(f"FETCH_WEBHOOK_SECRET={SECRET}\nFETCH__WEBHOOK__ENABLED=true\n"
                        "ANTHROPIC_API_KEY=sk-ant-compose-canary-000111\n")
    project = f"fetchtest{os.getpid()}"
    env = {**os.environ, "FETCH_ENV_FILE": str(env_file), "FETCH_IMAGE": orchestrator,
           "FETCH_KENNEL_IMAGE": kennel_image, "FETCH_HTTP_PORT": str(port),
           "COMPOSE_PROJECT_NAME": project}
    base = [binary, "-f", str(ROOT / "docker-compose.yml"), "-p", project]
    info = {"port": str(port), "project": project}
    try:
        yield {**info, "base": json.dumps(base), "env": json.dumps(env)}
    finally:
        subprocess.run([*base, "down", "-v", "--remove-orphans"], env=env,
                       capture_output=True, timeout=120)


def _run(compose: dict[str, str], *args: str, timeout: float = 180) -> str:
    base = json.loads(compose["base"])
    env = json.loads(compose["env"])
    done = subprocess.run([*base, *args], env=env, capture_output=True, text=True,
                          timeout=timeout)
    assert done.returncode == 0, f"docker-compose {' '.join(args)}: {done.stderr[-2000:]}"
    return done.stdout


def _signed(port: str, payload: dict[str, Any]) -> dict[str, Any]:
    body = json.dumps(payload).encode()
    ts = str(int(time.time()))
    sig = hmac.new(SECRET.encode(), ts.encode() + b"." + body, hashlib.sha256).hexdigest()
    req = urllib.request.Request(
        f"http://127.0.0.1:{port}/webhook", data=body, method="POST",
        headers={"Content-Type": "application/json", "X-Fetch-Timestamp": ts,
                 "X-Fetch-Signature": f"sha256={sig}"})
    with urllib.request.urlopen(req, timeout=40) as resp:
        return dict(json.loads(resp.read()))


def test_compose_config_up_status_down(compose: dict[str, str]) -> None:
    config = _run(compose, "config")
    assert "127.0.0.1" in config and "/var/run/docker.sock" in config
    assert "fetch-home" in config and "fetch-workspace" in config
    _run(compose, "up", "-d", "--no-build", "fetch")
    deadline = time.monotonic() + 90
    reply: dict[str, Any] = {}
    while time.monotonic() < deadline:
        try:
            reply = _signed(compose["port"], {"text": "/status", "wait": 10})
            break
        except (urllib.error.URLError, ConnectionError, OSError):
            time.sleep(1)
    else:
        logs = _run(compose, "logs", "--tail", "50", "fetch")
        pytest.fail(f"Fetch never answered on the webhook; logs:\n{logs}")
    texts = [r["text"] for r in reply.get("replies", [])]
    assert any("Fetch ·" in t for t in texts), reply
    status = next(t for t in texts if "Fetch ·" in t)
    assert "sandbox: docker: no network" in status, status
    # An unsigned request is refused by the real service too.
    bad = urllib.request.Request(f"http://127.0.0.1:{compose['port']}/webhook",
                                 data=b'{"text":"/status"}', method="POST")
    with pytest.raises(urllib.error.HTTPError) as info:
        urllib.request.urlopen(bad, timeout=10)
    assert info.value.code == 401
    info.value.close()
    _run(compose, "down", "-v")
