"""Kennels on another Docker engine reached over ssh (issue 25, 4): ``ssh://user@host:port``,
like the Docker CLI's, through a real sshd the module starts on 127.0.0.1 (its own config,
host key and authorized client key in its tmp folder) in front of the second engine's
unix socket (tests/docker/remote_daemon.py). The far side runs ``docker system
dial-stdio`` with ``DOCKER_HOST`` set for the key (``environment=`` in authorized_keys).

The ssh client is the system's ``ssh``, as the Docker CLI's is: an owner's own
``~/.ssh/config``, keys, agent and known_hosts apply. OpenSSH reads ``~/.ssh`` from the
passwd entry, not ``$HOME``, so the test's own config is given by an ``ssh`` on ``PATH``
that adds ``-F`` (the real ``~/.ssh`` is never read nor written)."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from core.errors import KennelError
from kennel.remote import RemoteDockerKennel
from kennel.remote_engine import Engine
from kennel.settings import DockerKennelSettings
from kennel.ssh_transport import SSH_BASE_URL
from orchestrator.boundary.remote_files import RemoteFiles
from orchestrator.config import Settings
from tests.conftest import Driver, git
from tests.docker.conftest import CANARY
from tests.docker.remote_daemon import SecondEngine
from tests.docker.remote_task import fetch_there, typo_there
from tests.fakes.model_server import ScriptedModelServer
from tests.fakes.require import missing

SSHD = "/usr/sbin/sshd"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _keygen(path: Path) -> str:
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "fetch-test", "-f", str(path)],
        check=True,
        capture_output=True,
    )
    return path.with_suffix(".pub").read_text().strip()


@dataclass
class SshGate:
    port: int
    bin: Path  # holds the `ssh` that reads the test's own config
    proc: subprocess.Popen[bytes]
    root: Path

    def logins(self) -> int:
        """Sessions sshd accepted so far (its log, -e)."""
        return (self.root / "sshd.log").read_text().count("Accepted publickey")

    @property
    def url(self) -> str:
        return f"ssh://root@127.0.0.1:{self.port}"

    def path_env(self) -> str:
        return f"{self.bin}{os.pathsep}{os.environ.get('PATH', '')}"


@pytest.fixture(scope="module")
def ssh_gate(
    second_engine: SecondEngine, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[SshGate]:
    for binary in ("ssh", "ssh-keygen"):
        if shutil.which(binary) is None:
            missing(f"{binary!r} is not installed (openssh-client: .ci/install.sh)")
    if not os.access(SSHD, os.X_OK):
        missing(f"{SSHD} is not installed (openssh-server: .ci/install.sh)")
    root = tmp_path_factory.mktemp("sshd")
    host_pub = _keygen(root / "host_key")
    client_pub = _keygen(root / "client_key")
    (root / "authorized_keys").write_text(
        f'environment="DOCKER_HOST=unix://{second_engine.socket}" {client_pub}\n'
    )
    port = _free_port()
    (root / "sshd_config").write_text(
        f"Port {port}\nListenAddress 127.0.0.1\nHostKey {root / 'host_key'}\n"
        f"PidFile {root / 'sshd.pid'}\nAuthorizedKeysFile {root / 'authorized_keys'}\n"
        "StrictModes no\nUsePAM no\nPermitRootLogin prohibit-password\n"
        "PasswordAuthentication no\nKbdInteractiveAuthentication no\n"
        "PermitUserEnvironment DOCKER_HOST\nAllowUsers root\n"
    )
    (root / "known_hosts").write_text(f"[127.0.0.1]:{port} {host_pub}\n")
    (root / "ssh_config").write_text(
        f"Host 127.0.0.1\n  IdentityFile {root / 'client_key'}\n  IdentitiesOnly yes\n"
        f"  UserKnownHostsFile {root / 'known_hosts'}\n  GlobalKnownHostsFile /dev/null\n"
        "  StrictHostKeyChecking yes\n  UpdateHostKeys no\n  BatchMode yes\n"
    )
    wrapper = root / "bin" / "ssh"
    wrapper.parent.mkdir()
    wrapper.write_text(f'#!/bin/sh\nexec {shutil.which("ssh")} -F {root / "ssh_config"} "$@"\n')
    wrapper.chmod(0o755)
    # sshd's privilege separation folder: made by the package's service, which is not run.
    Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)
    log = open(root / "sshd.log", "wb")  # noqa: SIM115 - the daemon's
    proc = subprocess.Popen(
        [SSHD, "-D", "-e", "-f", str(root / "sshd_config")],
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    log.close()
    gate = SshGate(port, wrapper.parent, proc, root)
    try:
        deadline = time.monotonic() + 20
        while True:
            if proc.poll() is not None:
                raise RuntimeError("sshd exited: " + (root / "sshd.log").read_text()[-800:])
            with socket.socket() as sock:
                if sock.connect_ex(("127.0.0.1", port)) == 0:
                    break
            if time.monotonic() > deadline:
                raise RuntimeError("sshd did not listen in time")
            time.sleep(0.1)
        yield gate
    finally:
        # Only the sshd this module started (and the sessions it forked: its group).
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(10)


@pytest.fixture
def ssh_path(ssh_gate: SshGate, monkeypatch: pytest.MonkeyPatch) -> SshGate:
    monkeypatch.setenv("PATH", ssh_gate.path_env())
    return ssh_gate


def test_the_engine_answers_through_the_ssh_command(ssh_path: SshGate) -> None:
    """What the SDK and the raw stream both run: ``ssh … docker system dial-stdio``."""
    done = subprocess.run(
        ["docker", "-H", ssh_path.url, "version", "--format", "{{.Server.Version}}"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0 and done.stdout.strip(), done.stderr


def test_the_sdk_keeps_one_ssh_and_ends_it(ssh_path: SshGate) -> None:
    """Requests share a pooled ssh session (not one ssh per request), and closing the
    client ends and reaps it."""
    client = Engine.parse(ssh_path.url, None, True).client()
    before = ssh_path.logins()
    try:
        for _ in range(5):
            assert client.ping() is True
        assert client.version()["ApiVersion"]
        pool = client.api.get_adapter(SSH_BASE_URL).get_connection(SSH_BASE_URL)
        pids = [c.sock.proc.pid for c in list(pool.pool.queue) if c is not None and c.sock]
        assert len(pids) == 1, pids
    finally:
        client.close()
    time.sleep(0.5)  # sshd writes its log line after the session starts
    assert ssh_path.logins() - before == 1
    for pid in pids:
        with pytest.raises(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)  # reaped already: not our child any more


def test_an_engine_with_an_unknown_host_key_is_refused(
    ssh_gate: SshGate, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The host key is checked (known_hosts, as the owner's ssh does): another key there
    is one line, and no kennel is made."""
    config = (ssh_gate.root / "ssh_config").read_text()
    other = tmp_path / "known_hosts"
    other.write_text(f"[127.0.0.1]:{ssh_gate.port} {_keygen(tmp_path / 'impostor')}\n")
    (tmp_path / "ssh_config").write_text(
        config.replace(str(ssh_gate.root / "known_hosts"), str(other))
    )
    wrapper = tmp_path / "bin" / "ssh"
    wrapper.parent.mkdir()
    wrapper.write_text(f'#!/bin/sh\nexec {shutil.which("ssh")} -F {tmp_path / "ssh_config"} "$@"\n')
    wrapper.chmod(0o755)
    monkeypatch.setenv("PATH", f"{wrapper.parent}{os.pathsep}{os.environ['PATH']}")
    kennel = RemoteDockerKennel(
        tmp_path / "home",
        DockerKennelSettings(),
        "unused",
        Engine.parse(ssh_gate.url, None, True),
        files=RemoteFiles(tmp_path / "home"),
    )
    with pytest.raises(KennelError, match=f"engine at {ssh_gate.url} \\(ssh\\) is not reachable"):
        kennel._docker()


def test_doctor_names_the_engine_over_ssh(
    ssh_path: SshGate, with_image: SecondEngine, tmp_path: Path
) -> None:
    from tests.cli.test_fetch_command import _env, _fetch_executable

    home, ws = tmp_path / "home", tmp_path / "ws"
    home.mkdir()
    ws.mkdir()
    env = _env(
        home,
        FETCH_KENNEL="auto",
        FETCH_WORKSPACE=str(ws),
        FETCH_DOCKER_HOST=ssh_path.url,
        PATH=ssh_path.path_env(),
    )
    done = subprocess.run(
        [_fetch_executable(), "doctor"],
        cwd=tmp_path,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
    )
    out = done.stdout
    engine = f"{ssh_path.url} (ssh)"
    assert f"auto → docker: engine answers on the engine at {engine}" in out, out + done.stderr
    assert f"on the Docker engine at {engine}" in out, out


@pytest.fixture
async def ssh_fetch(
    ssh_path: SshGate,
    with_image: SecondEngine,
    kennel_image: str,
    make_settings: Callable[..., Settings],
) -> AsyncIterator[tuple[Driver, ScriptedModelServer]]:
    async with fetch_there(make_settings, ssh_path.url) as both:
        yield both


async def test_a_task_runs_on_the_engine_over_ssh(
    ssh_fetch: tuple[Driver, ScriptedModelServer],
    ssh_path: SshGate,
    second_engine: SecondEngine,
    docker_client: Any,
) -> None:
    """The real Claude Code there, through the relay bridge riding ssh; the diff comes
    back, the commit is made here."""
    driver, model = ssh_fetch
    kennel, repo, original, _attrs = await typo_there(
        driver, model, second_engine, docker_client, 240, "over ssh"
    )
    # ssh cannot half-close an exec's stdin: a message sent mid-task waits for its end.
    assert kennel.steerable is False
    await driver.ask("yes", "Committed")
    assert git(repo, "rev-parse", "HEAD^") == original
    assert "The quick" in (repo / "README.md").read_text()
    calls = model.model_requests
    assert calls and all(r.headers.get("x-api-key") == CANARY for r in calls)
    status = " ".join((await driver.ask("/status", "Fetch ·")).split())
    assert f"on the Docker engine at {ssh_path.url} (ssh)" in status


def test_the_ssh_command_notices_a_far_side_that_drops_off() -> None:
    """ssh's own keepalive (within a minute), before any option of the owner's config;
    the real sshd above accepts the command line as it is."""
    from kennel.ssh_transport import ssh_argv

    argv = ssh_argv("ssh://fetch@example.invalid:2222")
    assert argv[: argv.index("--")].count("-o") >= 3
    assert "ServerAliveInterval=15" in argv and "ServerAliveCountMax=4" in argv
    assert argv[-4:] == ["example.invalid", "docker", "system", "dial-stdio"]
