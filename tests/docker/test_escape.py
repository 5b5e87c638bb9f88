"""Sandbox escape attempts from inside the real kennel, asserting effects (0 successes)."""

from __future__ import annotations

import asyncio
import socket
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from core.errors import KennelError
from kennel.base import ExecSpec
from kennel.docker_backend import DockerKennel, hardening_problems
from kennel.settings import DockerKennelSettings
from tests.conftest import make_repo
from tests.docker.conftest import CANARY


@pytest.fixture
async def warm(kennel_image: str, tmp_path: Path) -> Any:
    repo = make_repo(tmp_path / "ws", "app", {"a.txt": "a\n"})
    kennel = DockerKennel(
        tmp_path / "home",
        DockerKennelSettings(memory="256m", pids=64),
        kennel_image,
        secrets=(CANARY,),
    )
    async with kennel._lock:
        w = await kennel._ensure(repo)
    kennel._verify(w)
    yield w.container, repo
    await kennel.close()


@pytest.fixture
def host_listener() -> Iterator[int]:
    """A TCP server on the host: if anything inside reaches it, it records a hit."""
    server = socket.socket()
    server.bind(("0.0.0.0", 0))
    server.listen()
    server.settimeout(0.2)
    hits: list[str] = []
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, addr = server.accept()
                hits.append(str(addr))
                conn.close()
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield server.getsockname()[1]
    stop.set()
    thread.join()
    server.close()
    assert hits == [], f"the kennel reached the host: {hits}"


def run(container: Any, script: str) -> tuple[int, str]:
    # As a task runs: the kennel's own processes have another uid (fetch.kennel.user).
    result = container.exec_run(["bash", "-c", script], user=container.labels["fetch.kennel.user"])
    return int(result.exit_code), result.output.decode("utf-8", "replace")


def host_ips() -> list[str]:
    out = subprocess.run(["hostname", "-I"], capture_output=True, text=True).stdout.split()
    return [*out, "172.17.0.1", "127.0.0.1", "10.255.255.53"]


async def test_no_network_out(warm: tuple[Any, Path], host_listener: int) -> None:
    container, _repo = warm
    attempts = 0
    successes = 0
    for ip in host_ips():
        probes = [
            f"timeout 3 bash -c 'echo > /dev/tcp/{ip}/{host_listener}'",
            f"timeout 3 node -e \"require('net').connect({host_listener},'{ip}')"
            ".on('connect',()=>process.exit(0)).on('error',()=>process.exit(1))\"",
            f"timeout 3 curl -s http://{ip}:{host_listener}/",
            f"timeout 3 wget -q -O- http://{ip}:{host_listener}/",
            f"timeout 3 nc -z {ip} {host_listener}",
        ]
        for probe in probes:
            attempts += 1
            code, _ = run(container, probe)
            successes += code == 0
    code, _ = run(container, "timeout 3 getent hosts deb.debian.org")
    successes += code == 0
    code, out = run(container, "ls /sys/class/net")
    assert out.split() == ["lo"]
    assert attempts >= 20 and successes == 0


async def test_no_credential_anywhere_inside(warm: tuple[Any, Path]) -> None:
    container, _ = warm
    code, out = run(container, "cat /proc/1/environ | tr '\\0' '\\n'; env")
    assert code == 0 and CANARY not in out
    code, out = run(
        container,
        f"grep -rl --exclude-dir=proc --exclude-dir=sys -s '{CANARY}' "
        "/ 2>/dev/null | head -5; true",
    )
    assert out.strip() == ""


async def test_writes_outside_the_workspace_fail(warm: tuple[Any, Path]) -> None:
    container, repo = warm
    for target in (
        "/etc/evil",
        "/usr/bin/evil",
        "/opt/evil",
        "/relay/evil",
        "/evil",
        "/workspace/.git/config",
        "/workspace/.git/hooks/pre-commit",
    ):
        code, _ = run(container, f"echo x > {target}")
        assert code != 0, target
    assert run(container, "echo ok > /workspace/new.txt")[0] == 0
    assert (repo / "new.txt").read_text() == "ok\n"
    assert not (repo / ".git" / "hooks" / "pre-commit").exists()


async def test_fork_bomb_and_memory_hog_are_contained(kennel_image: str, tmp_path: Path) -> None:
    """Run through the product's exec path (as a CLI would be), not a bare docker exec."""
    repo = make_repo(tmp_path / "ws", "app", {"a.txt": "a\n"})
    kennel = DockerKennel(
        tmp_path / "home", DockerKennelSettings(memory="256m", pids=64), kennel_image
    )

    async def task(script: str) -> tuple[int, list[str]]:
        layout = kennel.layout(repo, "probe")
        proc = await kennel.exec(ExecSpec(("bash", "-c", script), {}, repo, layout))
        lines = [line async for line in proc.lines()]
        return await proc.wait(), lines

    try:
        _code, out = await task("timeout 8 bash -c ':(){ :|:& };:' 2>&1; echo done")
        assert "done" in out  # the shell survived: the pids limit stopped the bomb
        code, _ = await task(
            'timeout 20 node -e "const a=[]; for(;;) a.push(Buffer.alloc(64*1024*1024,1))"'
        )
        assert code not in (0, 124), code  # killed by the 256 MB limit, not the timeout
        _code, out = await task("echo alive")
        assert out == ["alive"]  # the kennel itself (init + forwarder) is still there
        (warm,) = kennel._warm.values()
        warm.container.reload()
        assert warm.container.status == "running"
    finally:
        await kennel.close()


def test_weak_container_is_refused() -> None:
    attrs = {
        "HostConfig": {
            "NetworkMode": "bridge",
            "CapDrop": [],
            "ReadonlyRootfs": False,
            "SecurityOpt": [],
            "Privileged": True,
        },
        "Config": {"User": "", "Env": [f"ANTHROPIC_API_KEY={CANARY}"]},
        "Mounts": [
            {
                "Type": "bind",
                "Source": "/var/run/docker.sock",
                "Destination": "/var/run/docker.sock",
                "RW": True,
            }
        ],
    }
    problems = hardening_problems(attrs, Path("/ws/app"), (CANARY,))
    text = "; ".join(problems)
    for expected in (
        "network is 'bridge'",
        "capabilities are not all dropped",
        "privileged",
        "no-new-privileges",
        "root filesystem is writable",
        "no pids limit",
        "runs as root",
        "Docker socket",
        "real credential",
        ".git is not hidden",
    ):
        assert expected in text


async def test_tampered_container_refuses_to_run(
    kennel_image: str, docker_client: Any, tmp_path: Path
) -> None:
    """A kennel container that someone recreated with a network is never used."""
    repo = make_repo(tmp_path / "ws", "app", {"a.txt": "a\n"})
    kennel = DockerKennel(tmp_path / "home", DockerKennelSettings(), kennel_image)
    name = kennel._container_name(repo)
    try:
        async with kennel._lock:
            w = await kennel._ensure(repo)
        w.container.remove(force=True)
        w.container = docker_client.containers.run(
            kennel_image, ["sleep", "300"], name=name, detach=True, user="1000:1000"
        )
        with pytest.raises(KennelError, match="not isolated as promised"):
            kennel._verify(w)
    finally:
        await kennel.close()


async def test_idle_kennel_is_reaped(kennel_image: str, docker_client: Any, tmp_path: Path) -> None:
    import docker.errors

    repo = make_repo(tmp_path / "ws", "idle", {"a.txt": "a\n"})
    kennel = DockerKennel(tmp_path / "home", DockerKennelSettings(idle_seconds=5), kennel_image)
    try:
        async with kennel._lock:
            warm = await kennel._ensure(repo)
        name = warm.name
        assert docker_client.containers.get(name).status == "running"
        await asyncio.sleep(9)
        with pytest.raises(docker.errors.NotFound):
            docker_client.containers.get(name)
        assert kennel._warm == {}
    finally:
        await kennel.close()
