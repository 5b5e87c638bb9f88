"""A second Docker engine for the remote-kennel tests: started by the test, all its own.

Its own data root, exec root, pidfile and unix socket in the test's tmp folder, a TLS
port on 127.0.0.1 with a CA, server and client certificate made here (``cryptography``),
and its own bridge: a second ``dockerd --bridge none`` would delete the first engine's
``docker0`` (../shared/facts/docker-kennel.md), so the test makes a bridge of its own
name and removes it after. The kennel image is copied in from the first engine
(``docker save | docker load``). ``stop`` ends the daemon (by its own pid), removes the
bridge and the folders it made, nothing else.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
import secrets
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID


def _key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _pem_key(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def _cert(
    subject: str,
    key: ec.EllipticCurvePrivateKey,
    issuer: tuple[x509.Name, ec.EllipticCurvePrivateKey] | None,
    usage: x509.ObjectIdentifier | None,
) -> x509.Certificate:
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)])
    now = datetime.datetime.now(datetime.UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(issuer[0] if issuer else name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
    )
    if issuer is None:
        builder = builder.add_extension(x509.BasicConstraints(ca=True, path_length=0), True)
    elif usage is not None:
        builder = builder.add_extension(x509.BasicConstraints(ca=False, path_length=None), True)
        builder = builder.add_extension(x509.ExtendedKeyUsage([usage]), False)
        if usage == ExtendedKeyUsageOID.SERVER_AUTH:
            builder = builder.add_extension(
                x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                False,
            )
    return builder.sign(issuer[1] if issuer else key, hashes.SHA256())


def make_certs(folder: Path) -> None:
    """ca.pem, cert.pem/key.pem (client: what kennel.docker.cert_path holds) and
    server-cert.pem/server-key.pem (the engine's), like the Docker docs' recipe."""
    folder.mkdir(parents=True, exist_ok=True)
    ca_key = _key()
    ca = _cert("fetch-test-ca", ca_key, None, None)
    server_key, client_key = _key(), _key()
    server = _cert("127.0.0.1", server_key, (ca.subject, ca_key), ExtendedKeyUsageOID.SERVER_AUTH)
    client = _cert("fetch", client_key, (ca.subject, ca_key), ExtendedKeyUsageOID.CLIENT_AUTH)
    pem = serialization.Encoding.PEM
    (folder / "ca.pem").write_bytes(ca.public_bytes(pem))
    (folder / "server-cert.pem").write_bytes(server.public_bytes(pem))
    (folder / "server-key.pem").write_bytes(_pem_key(server_key))
    (folder / "cert.pem").write_bytes(client.public_bytes(pem))
    (folder / "key.pem").write_bytes(_pem_key(client_key))
    for name in ("key.pem", "server-key.pem"):
        os.chmod(folder / name, 0o600)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class SecondEngine:
    root: Path  # everything the engine keeps, below the test's tmp folder
    port: int = 0
    bridge: str = ""
    proc: subprocess.Popen[bytes] | None = None
    figures: dict[str, float] = field(default_factory=dict)

    @property
    def certs(self) -> Path:
        return self.root / "certs"

    @property
    def url(self) -> str:
        return f"tcp://127.0.0.1:{self.port}"

    @property
    def socket(self) -> Path:
        return self.root / "d.sock"

    def start(self, timeout: float = 60) -> None:
        make_certs(self.certs)
        self.port = _free_port()
        self.bridge = f"fkt{secrets.token_hex(3)}"
        subprocess.run(["ip", "link", "add", self.bridge, "type", "bridge"], check=True)
        octet = 100 + secrets.randbelow(150)
        subprocess.run(
            ["ip", "addr", "add", f"10.231.{octet}.1/24", "dev", self.bridge], check=True
        )
        log = open(self.root / "dockerd.log", "wb")  # noqa: SIM115 - the daemon's, closed at stop
        started = time.monotonic()
        self.proc = subprocess.Popen(
            [
                "dockerd",
                "--tlsverify",
                f"--tlscacert={self.certs / 'ca.pem'}",
                f"--tlscert={self.certs / 'server-cert.pem'}",
                f"--tlskey={self.certs / 'server-key.pem'}",
                "-H",
                self.url,
                "-H",
                f"unix://{self.socket}",
                f"--data-root={self.root / 'data'}",
                f"--exec-root={self.root / 'exec'}",
                f"--pidfile={self.root / 'dockerd.pid'}",
                f"--bridge={self.bridge}",
                "--iptables=false",
                "--ip-masq=false",
                "--ip-forward=false",
            ],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        log.close()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(
                    "the second dockerd exited: " + (self.root / "dockerd.log").read_text()[-800:]
                )
            if self._answers():
                self.figures["engine_start_s"] = time.monotonic() - started
                return
            time.sleep(0.2)
        raise RuntimeError("the second dockerd did not answer in time")

    def _answers(self) -> bool:
        done = subprocess.run(
            ["docker", "-H", f"unix://{self.socket}", "version", "--format", "{{.Server.Version}}"],
            capture_output=True,
            check=False,
        )
        return done.returncode == 0

    def load_image(self, tag: str) -> None:
        """Copy ``tag`` from the first engine (docker save | docker load), timed."""
        started = time.monotonic()
        save = subprocess.Popen(["docker", "save", tag], stdout=subprocess.PIPE)
        load = subprocess.run(
            ["docker", "-H", f"unix://{self.socket}", "load"],
            stdin=save.stdout,
            capture_output=True,
            check=False,
        )
        assert save.stdout is not None
        save.stdout.close()
        if save.wait() != 0 or load.returncode != 0:
            raise RuntimeError(f"could not copy {tag}: {load.stderr.decode()[-400:]}")
        self.figures["image_copy_s"] = time.monotonic() - started

    def client(self) -> Any:
        import docker

        return docker.DockerClient(base_url=f"unix://{self.socket}", version="1.41")

    def stop(self) -> None:
        """End the daemon (its own pid), then remove its bridge and its folders."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(10)
        if self.bridge:
            subprocess.run(["ip", "link", "del", self.bridge], capture_output=True, check=False)
        # Whatever the daemon left mounted below its folders (it unmounts on a clean
        # stop), then the folders: only what this engine made.
        prefix = str(self.root) + "/"
        with open("/proc/self/mountinfo", encoding="utf-8") as table:
            points = [line.split()[4] for line in table if line.split()[4].startswith(prefix)]
        for point in sorted(points, key=len, reverse=True):
            subprocess.run(["umount", "-l", point], capture_output=True, check=False)
        for name in ("data", "exec"):
            subprocess.run(
                ["rm", "-rf", "--one-file-system", "--", str(self.root / name)],
                capture_output=True,
                check=False,
            )
        shutil.rmtree(self.certs, ignore_errors=True)
