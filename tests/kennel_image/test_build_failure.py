"""Building the kennel image says why it fails (issue 21, 7): the Dockerfile's registry check
stops the build within a minute with the reason and the fix, and build.py puts that reason
in its error. Real builds of the real Dockerfile (its apt layers from the builder's cache)
against registries of the test's own on 127.0.0.1: one that intercepts TLS (a self-signed
certificate the image does not trust) and one that refuses connections."""

from __future__ import annotations

import shutil
import socket
import ssl
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import suppress
from pathlib import Path

import pytest

from kennel.build import _run_build, default_ca_dir, failure_reason, make_context
from tests.fakes.require import missing


def test_the_reason_is_the_dockerfiles_own_lines() -> None:
    out = (
        "npm ERR! self-signed certificate in certificate chain\n"
        "kennel build: the npm registry is not reachable from the build (npm ping, exit 1).\n"
        "kennel build: reason: TLS interception: add its CA certificate\n"
    )
    reason = failure_reason(out)
    assert reason.startswith(": the npm registry is not reachable")
    assert "TLS interception" in reason
    assert "Debian mirror" in failure_reason("E: Unable to locate package git\n")
    assert failure_reason("something else\n") == ""


@pytest.fixture
def tls_registry(tmp_path: Path) -> Iterator[str]:
    """An HTTPS server whose certificate no CA signed: what a TLS-intercepting proxy shows."""
    if shutil.which("openssl") is None:
        missing("openssl is not installed")
    key, cert = tmp_path / "key.pem", tmp_path / "cert.pem"
    subprocess.run(
        [
            *("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1"),
            *("-subj", "/CN=127.0.0.1", "-keyout", str(key), "-out", str(cert)),
        ],
        check=True,
        capture_output=True,
    )
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    port = listener.getsockname()[1]

    def serve() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            with suppress(OSError, ssl.SSLError), ctx.wrap_socket(conn, server_side=True) as tls:
                tls.recv(1024)
            conn.close()

    threading.Thread(target=serve, daemon=True).start()
    yield f"https://127.0.0.1:{port}/"
    listener.close()


def _build(registry: str) -> tuple[int, str, float]:
    if shutil.which("docker") is None:
        missing("docker is not installed")
    with tempfile.TemporaryDirectory(prefix="fetch-kennel-fail-") as tmp:
        make_context(Path(tmp), default_ca_dir())  # the same context: apt layers cached
        cmd = ["docker", "build", "--network", "host", "--force-rm", "--target", "node"]
        cmd += ["--build-arg", f"NPM_CONFIG_REGISTRY={registry}", tmp]
        start = time.monotonic()
        code, out = _run_build(cmd, quiet=True)
        return code, out, time.monotonic() - start


def test_tls_interception_fails_fast_and_names_the_ca_fix(tls_registry: str) -> None:
    code, out, took = _build(tls_registry)
    assert code != 0, out[-3000:]
    reason = failure_reason(out)
    assert "TLS interception" in reason and "--ca-dir" in reason, out[-3000:]
    assert "npm" in out and ("certificate" in out or "CERT" in out)  # npm's own error shown
    assert took < 150, took


def test_no_registry_fails_fast_and_names_the_way_out() -> None:
    with socket.socket() as s:  # a port nothing listens on: refused at once
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    code, out, took = _build(f"http://127.0.0.1:{port}/")
    assert code != 0
    reason = failure_reason(out)
    assert "no connection" in reason and "HTTPS_PROXY" in reason, out[-3000:]
    assert took < 150, took
