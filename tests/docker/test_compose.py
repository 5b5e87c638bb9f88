"""Docker Compose (Debian's docker-compose 1.29): config, a real `up` of the locally built
images (the kennel service first, then Fetch), /healthz and the health check, a /status
round trip through the signed webhook, the demo task end to end (the demo repo in the
workspace volume, the demo harness inside a kennel container, the diff, yes, the commit),
`down`. And fetch.env.example documents every variable Fetch and the compose file read."""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import re
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
    # A key is configured (the canary never reaches a kennel), the demo harness does the work.
    env_file.write_text(
        f"FETCH_WEBHOOK_SECRET={SECRET}\nFETCH__WEBHOOK__ENABLED=true\n"
        "ANTHROPIC_API_KEY=sk-ant-compose-canary-000111\n"
        "FETCH_HARNESS=demo\n"
    )
    project = f"fetchtest{os.getpid()}"
    env = {
        **os.environ,
        "FETCH_ENV_FILE": str(env_file),
        "FETCH_HTTP_PORT": str(port),
        "COMPOSE_PROJECT_NAME": project,
    }
    base = [binary, "-f", str(ROOT / "docker-compose.yml"), "-p", project]
    # Compose names the images it builds after the project (docker-compose.yml names
    # none): the images built already stand in for them (`up --no-build` below).
    names = {"kennel": f"{project}_kennel", "fetch": f"{project}_fetch"}
    docker_client.images.get(kennel_image).tag(names["kennel"], "latest")
    docker_client.images.get(orchestrator).tag(names["fetch"], "latest")
    info = {"port": str(port), "project": project, "kennel_image": kennel_image}
    try:
        yield {**info, "base": json.dumps(base), "env": json.dumps(env)}
    finally:
        subprocess.run(
            [*base, "down", "-v", "--remove-orphans"], env=env, capture_output=True, timeout=120
        )
        for name in names.values():
            docker_client.images.remove(f"{name}:latest", noprune=True)


def _run(compose: dict[str, str], *args: str, timeout: float = 180) -> str:
    base = json.loads(compose["base"])
    env = json.loads(compose["env"])
    done = subprocess.run([*base, *args], env=env, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, f"docker-compose {' '.join(args)}: {done.stderr[-2000:]}"
    return done.stdout


def _signed(port: str, payload: dict[str, Any], path: str = "/webhook") -> dict[str, Any]:
    body = json.dumps(payload).encode()
    ts = str(int(time.time()))
    sig = hmac.new(SECRET.encode(), ts.encode() + b"." + body, hashlib.sha256).hexdigest()
    req = urllib.request.Request(
        f"http://127.0.0.1:{port}{path}",
        data=body,
        method="POST",
        headers={
            "Content-Type": "application/json",
            "X-Fetch-Timestamp": ts,
            "X-Fetch-Signature": f"sha256={sig}",
        },
    )
    with urllib.request.urlopen(req, timeout=40) as resp:
        return dict(json.loads(resp.read()))


def test_compose_config_up_status_down(compose: dict[str, str]) -> None:
    config = _run(compose, "config")
    assert "127.0.0.1" in config and "/var/run/docker.sock" in config
    assert "fetch-home" in config and "fetch-workspace" in config
    _run(compose, "up", "-d", "--no-build")  # as the README says, minus the build
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
    bad = urllib.request.Request(
        f"http://127.0.0.1:{compose['port']}/webhook", data=b'{"text":"/status"}', method="POST"
    )
    with pytest.raises(urllib.error.HTTPError) as info:
        urllib.request.urlopen(bad, timeout=10)
    assert info.value.code == 401
    info.value.close()

    # /healthz: no secret, nothing said but ok; Compose's health check sees the same.
    with urllib.request.urlopen(f"http://127.0.0.1:{compose['port']}/healthz", timeout=10) as resp:
        assert resp.status == 200 and json.loads(resp.read()) == {"ok": True}
    # The login link in the logs names the published address (not the container's
    # 0.0.0.0:8787), and it logs a browser in.
    logs = _run(compose, "logs", "fetch")
    link = re.search(r"🔑 web \(dashboard, chat\): (\S+)", logs)
    assert link, logs[-2000:]
    assert link.group(1).startswith(f"http://127.0.0.1:{compose['port']}/login?token="), link
    browser = urllib.request.build_opener(urllib.request.HTTPCookieProcessor())
    with browser.open(link.group(1) + "&next=/chat", timeout=10) as page:
        assert page.status == 200 and page.url.endswith("/chat")
    container = _run(compose, "ps", "-q", "fetch").strip()
    health = ""
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline and health != "healthy":
        health = subprocess.run(
            ["docker", "inspect", "--format", "{{.State.Health.Status}}", container],
            capture_output=True,
            text=True,
        ).stdout.strip()
        time.sleep(2)
    assert health == "healthy", health

    # The demo task, end to end: the demo repo is in the workspace volume, the demo
    # harness runs inside a kennel container, the diff comes back, yes commits it.
    said = _conversation(compose, "fix the typo in README.md of demo", "Apply? (yes/no)")
    assert "README.md +1" in said and "+The quick" in said, said
    # Its kennel was made from this project's own kennel image, found by Compose's
    # labels (kennel/compose.py), never from a shared name.
    kennels = subprocess.run(
        ["docker", "ps", "--filter", "label=fetch.kennel", "--format", "{{.Image}} {{.Labels}}"],
        capture_output=True,
        text=True,
    ).stdout.splitlines()
    ours = [k for k in kennels if "/data/home" in k]
    wanted = _image(["docker", "image", "inspect", "--format", "{{.Id}}", compose["kennel_image"]])
    # The engine shows an image given by id as its short id.
    short = wanted.removeprefix("sha256:")[:12]
    assert ours and all(k.split()[0] in (wanted, short) for k in ours), (ours, wanted)
    done = _conversation(compose, "yes", "Committed")
    sha = re.search(r"Committed ([0-9a-f]{7,40}) to demo", done)
    assert sha, done
    # The working tree belongs to the kennel's uid, so this git is told to trust it.
    log = _run(
        compose,
        "exec",
        "-T",
        "fetch",
        "git",
        "-c",
        "safe.directory=*",
        "-C",
        "/data/home/workspace/demo",
        "log",
        "-2",
        "--format=%H %s",
    )
    assert log.splitlines()[0].startswith(sha.group(1)), log
    assert "fix the typo in README.md of demo" in log
    readme = _run(compose, "exec", "-T", "fetch", "cat", "/data/home/workspace/demo/README.md")
    assert "The quick brown fox" in readme and "Teh quick" not in readme
    _run(compose, "down", "-v")


def _conversation(compose: dict[str, str], text: str, until: str, timeout: float = 240) -> str:
    """Send ``text`` on the webhook; collect replies until one contains ``until``."""
    said = [r["text"] for r in _signed(compose["port"], {"text": text, "wait": 20})["replies"]]
    deadline = time.monotonic() + timeout
    while not any(until in t for t in said):
        if time.monotonic() > deadline:
            logs = _run(compose, "logs", "--tail", "80", "fetch")
            pytest.fail(f"no {until!r} after {text!r}; replies: {said}; logs:\n{logs}")
        polled = _signed(compose["port"], {"wait": 20}, "/webhook/replies")
        said += [r["text"] for r in polled["replies"]]
    return "\n".join(said)


def test_env_example_documents_every_variable() -> None:
    from orchestrator.config import _ENV_KEYS

    example = (ROOT / "fetch.env.example").read_text()
    documented = set(re.findall(r"^#? ?([A-Z][A-Z0-9_]+)=", example, re.MULTILINE))
    compose_vars = set(re.findall(r"\$\{([A-Z0-9_]+)", (ROOT / "docker-compose.yml").read_text()))
    wanted = set(_ENV_KEYS) | {"FETCH_CONFIG"} | compose_vars
    assert wanted <= documented, sorted(wanted - documented)
    # What Compose itself sets is marked as such, not left for the owner to set twice.
    for name in ("FETCH_HOME", "FETCH_KENNEL", "FETCH_RUN_DIR"):
        assert re.search(rf"^# {name}=", example, re.MULTILINE), name
