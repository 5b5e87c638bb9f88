"""The local kennel: own process group, private network namespace, the relay socket as
the only way out. Every CLI here works on a real run's tree (tests/kennel/runs.py)."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import socket
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from aiohttp import web

from core.errors import KennelError
from kennel.base import ExecSpec, RelaySpec
from kennel.local import LocalKennel, netns_available
from tests.fakes.require import missing
from tests.kennel.procs import running
from tests.kennel.runs import Runs
from tests.kennel.runs import runs as runs  # the fixture

PROBE = """
import socket, sys
target = int(sys.argv[1]); relay = int(sys.argv[2])
def can(port):
    try:
        socket.create_connection(("127.0.0.1", port), timeout=2).close(); return "open"
    except OSError as e:
        return "closed"
print("host", can(target), flush=True)
s = socket.create_connection(("127.0.0.1", relay), timeout=2)
s.sendall(b"GET /v1/models HTTP/1.0\\r\\nHost: relay\\r\\nx-api-key: probe-run-secret\\r\\n\\r\\n")
data = b""
while chunk := s.recv(4096):
    data += chunk
print("relay", data.split(b"\\r\\n\\r\\n", 1)[1].decode(), flush=True)
try:
    socket.getaddrinfo("example.com", 80); print("dns open")
except OSError:
    print("dns closed")
"""


@asynccontextmanager
async def upstream() -> AsyncIterator[str]:
    """A vendor stand-in on the host's loopback: answers ``pong:<path>``."""

    async def pong(request: web.Request) -> web.Response:
        return web.Response(text=f"pong:{request.path}")

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", pong)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        await runner.cleanup()


def relay_to(url: str, log: Path) -> RelaySpec:
    return RelaySpec(
        upstream=url,
        provider="anthropic",
        api_key="sk-test-real-key-0000",
        harness="probe",
        secret="probe-run-secret",  # what PROBE sends as its key
        task_id=1,
        log_path=log,
    )


def _require_netns() -> None:
    if not netns_available():
        missing("no network namespaces here (unshare -n)")


async def _collect(kennel: LocalKennel, spec: ExecSpec) -> list[str]:
    proc = await kennel.exec(spec)
    lines = [line async for line in proc.lines()]
    await proc.wait()
    return lines


async def test_no_network_but_the_relay_socket(tmp_path: Path, runs: Runs) -> None:
    # The kennel starts the model relay for the process: the only way out.
    _require_netns()
    host = socket.socket()
    host.bind(("127.0.0.1", 0))
    host.listen()
    host_port = host.getsockname()[1]
    log = tmp_path / "relay.jsonl"
    kennel = LocalKennel(runs.home, "required")
    run = runs.open(kennel)
    try:
        async with upstream() as url:
            port = str(run.layout.relay_port)
            spec = run.spec(
                (sys.executable, "-c", PROBE, str(host_port), port),
                {"PATH": "/usr/bin"},
                relay_to(url, log),
            )
            lines = await _collect(kennel, spec)
    finally:
        host.close()
    assert lines == ["host closed", "relay pong:/v1/models", "dns closed"]
    logged = [json.loads(line) for line in log.read_text().splitlines()]
    assert [(e["path"], e["status"], e["harness"]) for e in logged] == [
        ("/v1/models", 200, "probe")
    ]
    assert not spec.layout.relay_socket.exists()  # the relay ended with the process


async def test_the_relay_lives_until_the_process_is_terminated(tmp_path: Path, runs: Runs) -> None:
    code = "print('ready', flush=True); import time; time.sleep(60)"
    kennel = LocalKennel(runs.home, "auto")
    async with upstream() as url:
        spec = runs.open(kennel).spec(
            (sys.executable, "-c", code),
            {"PATH": "/usr/bin"},
            relay_to(url, tmp_path / "relay.jsonl"),
        )
        proc = await kennel.exec(spec)
        async for line in proc.lines():
            if line == "ready":
                break
        assert spec.layout.relay_socket.exists()
        await proc.terminate(1.0)
    assert not spec.layout.relay_socket.exists()
    assert proc.relay_tokens() == (0, 0)


async def test_a_process_that_cannot_start_leaves_no_relay(tmp_path: Path, runs: Runs) -> None:
    kennel = LocalKennel(runs.home, "auto")
    async with upstream() as url:
        spec = runs.open(kennel).spec(
            ("true",), {"PATH": "/usr/bin"}, relay_to(url, tmp_path / "relay.jsonl")
        )
        missing = dataclasses.replace(spec, repo=tmp_path / "no-such-folder")
        with pytest.raises(KennelError):
            await kennel.exec(missing)
    assert not spec.layout.relay_socket.exists()


async def test_host_env_does_not_leak(runs: Runs, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-canary-in-host-env")
    kennel = LocalKennel(runs.home, "auto")
    run = runs.open(kennel)
    spec = run.spec(
        (sys.executable, "-c", "import os; print(sorted(os.environ)); print(os.getcwd())"),
        {"PATH": "/usr/bin", "ONLY": "1"},
    )
    lines = await _collect(kennel, spec)
    assert "ANTHROPIC_API_KEY" not in lines[0] and "ONLY" in lines[0]
    assert lines[1] == str(run.tree)  # it works in the run's tree, not the owner's repo


async def test_terminate_kills_the_whole_tree(runs: Runs) -> None:
    # A child that starts its own session escapes the process group; it must die too.
    code = (
        "import subprocess, time, sys\n"
        "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'],"
        " start_new_session=True)\n"
        "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
        "print('ready', flush=True); time.sleep(60)\n"
    )
    kennel = LocalKennel(runs.home, "auto")
    proc = await kennel.exec(runs.open(kennel).spec((sys.executable, "-c", code)))
    async for line in proc.lines():
        if line == "ready":
            break
    await asyncio.sleep(0.2)
    before = proc.alive_pids()
    assert len(before) >= 4  # launcher, the script, its two children
    took = await proc.terminate(1.0)
    assert took < 2.0
    assert [pid for pid in before if running(pid)] == []


def test_required_isolation_refuses_without_netns(monkeypatch: pytest.MonkeyPatch) -> None:
    import kennel.local as local

    monkeypatch.setattr(local, "netns_available", lambda: False)
    kennel = LocalKennel(Path("/tmp"), "required")
    assert "refusing" in kennel.isolation()
