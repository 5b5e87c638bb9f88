"""Another Docker engine, named like the Docker CLI's ``DOCKER_HOST``: ``kennel.docker.host``.

``ssh://[user@]host[:port]`` (the engine reached through ``ssh … docker system
dial-stdio``, like the CLI), ``tcp://host:port`` with TLS (``cert_path`` holds ``ca.pem``,
``cert.pem`` and ``key.pem``, like ``DOCKER_CERT_PATH``; ``tls_verify`` checks the
engine's certificate against ``ca.pem``, like ``DOCKER_TLS_VERIFY``), or another
``unix://`` socket. Plain ``tcp://`` without TLS is refused: it is root on that machine
for whoever can reach the port, and the relay's traffic would cross it in the clear.

Two ways in: the Docker SDK's client for the API, and a raw connection of our own for
the one long-lived stream the relay rides (kennel/remote_bridge.py).
"""

from __future__ import annotations

import asyncio
import shutil
import socket
import ssl
from collections.abc import Awaitable, Callable
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from core.errors import KennelError

API_VERSION = "1.41"  # Docker 20.10; asked for explicitly, so no request is made early
KEEPALIVE_IDLE, KEEPALIVE_EVERY, KEEPALIVE_TRIES = 15, 15, 4
LOCAL_SOCKETS = frozenset({"unix:///var/run/docker.sock", "unix:///run/docker.sock"})


def is_remote(host: str | None) -> bool:
    """Whether ``kennel.docker.host`` names an engine the kennel must reach as data
    (anything but unset or this machine's own engine socket)."""
    return bool(host) and str(host).rstrip("/") not in LOCAL_SOCKETS


@dataclass(frozen=True, slots=True)
class Engine:
    url: str
    cert_path: Path | None = None
    tls_verify: bool = True

    @classmethod
    def parse(cls, url: str, cert_path: Path | None, tls_verify: bool) -> Engine:
        """The engine, or one ``KennelError`` line saying what is wrong with the setting."""
        parts = urlsplit(url)
        if parts.scheme not in ("ssh", "tcp", "unix"):
            raise KennelError(
                f"kennel.docker.host {url!r}: use ssh://user@host, tcp://host:port (TLS) "
                "or unix:///path"
            )
        if parts.scheme in ("ssh", "tcp") and not parts.hostname:
            raise KennelError(f"kennel.docker.host {url!r} names no host")
        if parts.scheme == "tcp":
            if parts.port is None:
                raise KennelError(f"kennel.docker.host {url!r} names no port")
            if cert_path is None:
                raise KennelError(
                    f"kennel.docker.host {url!r} is tcp without TLS: set "
                    "kennel.docker.cert_path (a folder with ca.pem, cert.pem, key.pem)"
                )
            missing = [
                n for n in ("ca.pem", "cert.pem", "key.pem") if not (cert_path / n).is_file()
            ]
            if missing:
                raise KennelError(f"kennel.docker.cert_path {cert_path} lacks {', '.join(missing)}")
        if parts.scheme == "ssh" and shutil.which("ssh") is None:
            raise KennelError(
                f"kennel.docker.host {url!r} is ssh, which needs the ssh command "
                "(openssh-client); or reach the engine over TLS: tcp://host:2376"
            )
        if parts.scheme == "unix" and not parts.path:
            raise KennelError(f"kennel.docker.host {url!r} names no socket")
        return cls(url, cert_path, tls_verify)

    @property
    def scheme(self) -> str:
        return urlsplit(self.url).scheme

    def describe(self) -> str:
        """The engine, for /status and ``fetch doctor``."""
        if self.scheme == "tcp":
            how = "TLS, engine verified" if self.tls_verify else "TLS, engine NOT verified"
            return f"{self.url} ({how})"
        if self.scheme == "ssh":
            return f"{self.url} (ssh)"
        return self.url

    # -- the SDK's client ----------------------------------------------------------------
    def client(self, timeout: float = 30) -> Any:
        import docker
        import docker.tls

        if self.scheme == "ssh":
            from kennel.ssh_transport import ssh_client

            return ssh_client(self.url, API_VERSION, timeout)
        kwargs: dict[str, Any] = {"version": API_VERSION, "timeout": timeout}
        if self.scheme == "tcp":
            assert self.cert_path is not None
            kwargs["tls"] = docker.tls.TLSConfig(
                client_cert=(str(self.cert_path / "cert.pem"), str(self.cert_path / "key.pem")),
                ca_cert=str(self.cert_path / "ca.pem") if self.tls_verify else None,
                verify=self.tls_verify,
            )
        client = docker.DockerClient(base_url=self.url, **kwargs)
        # requests lets REQUESTS_CA_BUNDLE (set system-wide on many machines) replace the
        # engine's own CA: the engine's certificate would then fail to verify, or worse,
        # be checked against the wrong authorities. Only ca.pem decides.
        client.api.trust_env = False
        return client

    # -- a raw connection ----------------------------------------------------------------
    async def connect(
        self,
    ) -> tuple[asyncio.StreamReader, asyncio.StreamWriter, Callable[[], Awaitable[None]]]:
        """A connection to the engine's API (reader, writer, close)."""
        parts = urlsplit(self.url)
        if self.scheme == "unix":
            reader, writer = await asyncio.open_unix_connection(parts.path)
        elif self.scheme == "tcp":
            reader, writer = await asyncio.open_connection(
                parts.hostname,
                parts.port,
                ssl=self._ssl(),
                server_hostname=parts.hostname if self.tls_verify else "",
            )
            keep_alive(writer.get_extra_info("socket"))
        else:
            from kennel.ssh_transport import ssh_argv

            argv = ssh_argv(self.url)
            proc = await asyncio.create_subprocess_exec(
                *argv,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.DEVNULL,
            )
            assert proc.stdin is not None and proc.stdout is not None

            async def end() -> None:
                if proc.returncode is None:
                    proc.kill()
                await proc.wait()

            return proc.stdout, proc.stdin, end

        async def close() -> None:
            # Dropped, not flushed: what the kennel never read may fill the buffer, and a
            # graceful close would wait for it forever.
            writer.transport.abort()
            with suppress(OSError, ssl.SSLError):
                await writer.wait_closed()

        return reader, writer, close

    def _ssl(self) -> ssl.SSLContext:
        assert self.cert_path is not None
        if self.tls_verify:
            ctx = ssl.create_default_context(cafile=str(self.cert_path / "ca.pem"))
        else:
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
        ctx.load_cert_chain(str(self.cert_path / "cert.pem"), str(self.cert_path / "key.pem"))
        return ctx


def keep_alive(sock: Any) -> bool:
    """TCP keepalive on a connection to an engine (15 s idle, then every 15 s, 4 tries):
    a far side that drops off silently (no FIN, no RST) ends the stream within about
    90 s, as ssh's own keepalive does for ssh:// engines, instead of leaving a task's
    output or its relay bridge waiting forever. False (nothing set) for a socket that is
    not TCP: a unix socket, ssh's pipes."""
    # A socket, or asyncio's view of one (a transport's ``socket``: it has setsockopt).
    if getattr(sock, "family", None) not in (socket.AF_INET, socket.AF_INET6):
        return False
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPIDLE, KEEPALIVE_IDLE)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPINTVL, KEEPALIVE_EVERY)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPCNT, KEEPALIVE_TRIES)
    except OSError:
        return False
    return True


__all__ = ["API_VERSION", "Engine", "is_remote", "keep_alive"]
