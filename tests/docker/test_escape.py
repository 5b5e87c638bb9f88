"""Sandbox escape attempts from inside the real kennel, asserting effects (0 successes).
Every container here is a repository's warm kennel over its runs folder, and every task
works on a real run of its own (tests/kennel/runs.py)."""

from __future__ import annotations

import asyncio
import socket
import subprocess
import threading
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from core.errors import KennelError
from kennel.docker_backend import RUNS, DockerKennel, hardening_problems
from kennel.settings import DockerKennelSettings
from tests.conftest import tree_snapshot
from tests.docker.conftest import CANARY
from tests.kennel.runs import Run, Runs
from tests.kennel.runs import runs as runs  # the fixture


@dataclass
class Warm:
    kennel: DockerKennel
    container: Any
    run: Run  # the run a task in it works on

    @property
    def tree(self) -> str:
        """The run's tree as the task sees it."""
        return str(self.run.layout.workdir)


@pytest.fixture
async def warm(kennel_image: str, runs: Runs) -> AsyncIterator[Warm]:
    kennel = DockerKennel(
        runs.home,
        DockerKennelSettings(memory="256m", pids=64),
        kennel_image,
        secrets=(CANARY,),
    )
    run = runs.open(kennel, runs.repo("app", {"a.txt": "a\n"}))
    try:
        async with kennel._lock:
            w = await kennel._ensure(run.runs)
        kennel._verify(w)
        yield Warm(kennel, w.container, run)
    finally:
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


async def test_no_network_out(warm: Warm, host_listener: int) -> None:
    container = warm.container
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
    code, _ = run(container, "timeout 3 getent hosts example.com")
    successes += code == 0
    code, out = run(container, "ls /sys/class/net")
    assert out.split() == ["lo"]
    assert attempts >= 20 and successes == 0


async def test_no_credential_anywhere_inside(warm: Warm) -> None:
    container = warm.container
    code, out = run(container, "cat /proc/1/environ | tr '\\0' '\\n'; env")
    assert code == 0 and CANARY not in out
    code, out = run(
        container,
        f"grep -rl --exclude-dir=proc --exclude-dir=sys -s '{CANARY}' "
        "/ 2>/dev/null | head -5; true",
    )
    assert out.strip() == ""


async def test_writes_outside_the_run_fail(warm: Warm, runs: Runs) -> None:
    container, repo = warm.container, warm.run.repo
    before = tree_snapshot(repo)
    git_config = (repo / ".git" / "config").read_bytes()
    run_root = warm.run.layout.workdir.parent
    for target in (
        "/etc/evil",
        "/usr/bin/evil",
        "/opt/evil",
        "/relay/evil",
        "/evil",
        f"{RUNS}/evil",  # the runs folder is Fetch's
        f"{run_root}/evil",  # so is the run's own folder (only its tree and state are not)
        f"{run_root}/meta.json",
    ):
        code, _ = run(container, f"echo x > {target}")
        assert code != 0, target
    # The owner's .git is shown nowhere in the kennel, nor is the owner's working tree;
    # the runs folder cannot be listed (no other run's name, its own is not guessable).
    other = runs.open(warm.kennel, repo)
    code, out = run(container, f"ls -A {warm.tree}; ls {RUNS}")
    assert code != 0 and ".git" not in out.split() and "a.txt" in out.split(), out
    assert other.layer.name not in out and warm.run.layer.name not in out
    code, out = run(container, f"cat /proc/self/mountinfo | grep -c -- '{repo}'; true")
    assert out.strip() == "0", out
    # The run's tree is writable, and what is written lands there, not in the owner's repo.
    # A .git the CLI makes in its tree is the run's own (the boundary reads it as data).
    hook = "mkdir -p .git/hooks && echo x > .git/hooks/pre-commit"
    assert run(container, f"cd {warm.tree} && echo ok > new.txt && {hook}")[0] == 0
    assert (warm.run.writes / "new.txt").read_text() == "ok\n"
    assert (warm.run.writes / ".git" / "hooks" / "pre-commit").is_file()
    assert tree_snapshot(repo) == before and not (repo / "new.txt").exists()
    assert (repo / ".git" / "config").read_bytes() == git_config
    assert not (repo / ".git" / "hooks" / "pre-commit").exists()


async def test_fork_bomb_and_memory_hog_are_contained(kennel_image: str, runs: Runs) -> None:
    """Run through the product's exec path (as a CLI would be), not a bare docker exec."""
    repo = runs.repo("app", {"a.txt": "a\n"})
    kennel = DockerKennel(runs.home, DockerKennelSettings(memory="256m", pids=64), kennel_image)

    async def task(script: str) -> tuple[int, list[str]]:
        proc = await kennel.exec(runs.open(kennel, repo).spec(("bash", "-c", script), {}))
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
            },
            # The owner's repository writable in the kennel (the old design), and /runs
            # bound from another folder than the repository's runs.
            {"Type": "bind", "Source": "/ws/app", "Destination": "/workspace", "RW": True},
            {
                "Type": "bind",
                "Source": "/ws/app/.git",
                "Destination": "/workspace/.git",
                "RW": True,
            },
            {"Type": "bind", "Source": "/elsewhere", "Destination": "/runs", "RW": True},
            {"Type": "bind", "Source": "/ws/app/.git", "Destination": "/owner-git", "RW": False},
            {"Type": "volume", "Source": "vol", "Destination": "/data", "RW": True},
        ],
    }
    runs = Path("/home/fetch/runs/app-0a1b2c3d")
    problems = hardening_problems(attrs, runs, (CANARY,))
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
        "/workspace is mounted (bind)",
        "/workspace/.git is mounted (bind)",
        "/owner-git is mounted (bind)",
        "/data is mounted (volume)",
        f"/runs is /elsewhere, not {runs}",
    ):
        assert expected in text, text
    # The kennel as it is made: the runs folder writable at /runs, the relay read-only.
    good = {
        "HostConfig": {
            "NetworkMode": "none",
            "CapDrop": ["ALL"],
            "SecurityOpt": ["no-new-privileges"],
            "ReadonlyRootfs": True,
            "PidsLimit": 64,
            "Memory": 1 << 28,
            "NanoCpus": 10**9,
            "Ulimits": [{"Name": n, "Soft": 9, "Hard": 9} for n in ("nproc", "cpu", "fsize")],
        },
        "Config": {"User": "65533:65533", "Labels": {"fetch.kennel.user": "65520:65520"}},
        "Mounts": [
            {"Type": "bind", "Source": str(runs), "Destination": "/runs", "RW": True},
            {"Type": "bind", "Source": "/tmp/fetch-x/docker-app", "Destination": "/relay"},
        ],
    }
    assert hardening_problems(good, runs, (CANARY,)) == []


async def test_tampered_container_refuses_to_run(
    kennel_image: str, docker_client: Any, runs: Runs
) -> None:
    """A kennel container that someone recreated with a network is never used."""
    kennel = DockerKennel(runs.home, DockerKennelSettings(), kennel_image)
    folder = runs.open(kennel, runs.repo("app", {"a.txt": "a\n"})).runs
    name = kennel._container_name(folder)
    try:
        async with kennel._lock:
            w = await kennel._ensure(folder)
        w.container.remove(force=True)
        w.container = docker_client.containers.run(
            kennel_image, ["sleep", "300"], name=name, detach=True, user="1000:1000"
        )
        with pytest.raises(KennelError, match="not isolated as promised"):
            kennel._verify(w)
    finally:
        await kennel.close()


async def test_idle_kennel_is_reaped(kennel_image: str, docker_client: Any, runs: Runs) -> None:
    import docker.errors

    kennel = DockerKennel(runs.home, DockerKennelSettings(idle_seconds=5), kennel_image)
    folder = runs.open(kennel, runs.repo("idle", {"a.txt": "a\n"})).runs
    try:
        async with kennel._lock:
            warm = await kennel._ensure(folder)
        name = warm.name
        assert docker_client.containers.get(name).status == "running"
        await asyncio.sleep(9)
        with pytest.raises(docker.errors.NotFound):
            docker_client.containers.get(name)
        assert kennel._warm == {}
    finally:
        await kennel.close()
