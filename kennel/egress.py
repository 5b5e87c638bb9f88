"""The setup phase's only way out: an HTTP proxy on the host that reaches package
registries and nothing else.

A repository's setup script (orchestrator/task/setup.py) runs in the kennel like any
other run, with no network; the kennel's forwarder offers ``127.0.0.1:<relay port>``
inside, which leads to this proxy's unix socket instead of the model relay. pip, npm,
pnpm and yarn all take ``HTTP(S)_PROXY``: for ``https`` they send ``CONNECT host:443``
and speak TLS through the tunnel (so a registry's certificate is checked by the client,
end to end), for plain ``http`` (a local index) an absolute-form request.

Every request names its host and port, and only an allowed pair is connected to;
everything else gets a 403 and a line in the log. Nothing else is offered: no caching,
no rewriting, no other methods. Written here rather than taken from a proxy library:
those bring plugins, caches and admin endpoints, and this one must do two things only,
each checked against the allowlist before a socket is opened.
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
import logging
import os
import socket
import struct
import subprocess
import sys
import time
from collections.abc import Iterable
from contextlib import suppress
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from urllib.parse import urlsplit

log = logging.getLogger(__name__)

HEAD_MAX = 16 * 1024  # a request line and its headers
HEAD_TIMEOUT = 15.0  # to send them
CONNECT_TIMEOUT = 15.0  # to reach the registry
IDLE_TIMEOUT = 300.0  # a tunnel with no byte either way for this long is closed
MAX_CONNECTIONS = 64
CHUNK = 64 * 1024
# Headers meant for a proxy or for one hop: never passed on.
HOP = frozenset(
    {"proxy-connection", "proxy-authorization", "connection", "keep-alive", "te", "upgrade"}
)


class Refusal(ValueError):
    """An allowlist entry that is not a host, host:port or URL."""


@dataclass(frozen=True, slots=True)
class Allow:
    """Hosts (lower case) and the ports each may be reached on (None: 80 and 443)."""

    hosts: frozenset[tuple[str, int | None]]

    def permits(self, host: str, port: int) -> bool:
        name = _norm(host)
        return (name, port) in self.hosts or (port in (80, 443) and (name, None) in self.hosts)

    def shown(self) -> list[str]:
        return sorted(f"{h}:{p}" if p else h for h, p in self.hosts)


def _norm(host: str) -> str:
    host = host.strip().lower().rstrip(".")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    return host


def parse_allow(entries: Iterable[str]) -> Allow:
    """``host``, ``host:port`` or a URL (``https://host[:port]/...``: its host, and its
    port or the scheme's). ``Refusal`` names an entry that is none of these."""
    hosts: set[tuple[str, int | None]] = set()
    for raw in entries:
        entry = str(raw).strip()
        if not entry:
            continue
        try:
            if "://" in entry:
                parts = urlsplit(entry)
                if parts.scheme not in ("http", "https") or not parts.hostname:
                    raise Refusal(f"{entry!r}: not an http(s) URL")
                port = parts.port or (443 if parts.scheme == "https" else 80)
                hosts.add((_norm(parts.hostname), port))
                continue
            host, sep, port_text = entry.rpartition(":")
            if sep and port_text.isdigit() and "]" not in port_text and host.count(":") == 0:
                port = int(port_text)
                if not 0 < port < 65536:
                    raise Refusal(f"{entry!r}: no such port")
                hosts.add((_host(host, entry), port))
            else:
                hosts.add((_host(entry, entry), None))
        except ValueError as err:
            raise Refusal(str(err) if isinstance(err, Refusal) else f"{entry!r}: {err}") from err
    return Allow(frozenset(hosts))


def _host(text: str, entry: str) -> str:
    name = _norm(text)
    if not name or any(c in name for c in "/ @?#\\") or name in ("*", "0.0.0.0", "::"):
        raise Refusal(f"{entry!r}: not a host name")
    with suppress(ValueError):
        ipaddress.ip_address(name)
        return name
    if not all(part and len(part) < 64 for part in name.split(".")):
        raise Refusal(f"{entry!r}: not a host name")
    return name


@cache
def default_registries() -> tuple[str, ...]:
    """The registries this host's own pip and npm use (their configured index, or their
    built-in default), asked of the tools themselves: the owner's mirror, when they have
    one, is what setup may reach."""
    found: list[str] = []
    # pip: its configured indexes, else its default index and the host serving its files.
    try:
        done = subprocess.run(
            [sys.executable, "-m", "pip", "config", "list"],
            capture_output=True,
            text=True,
            timeout=20,
            check=False,
        )
        for line in done.stdout.splitlines():
            key, _, value = line.partition("=")
            if key.endswith(("index-url", "extra-index-url")):
                found += [v for v in value.strip().strip("'\"").split() if _web(v)]
    except (OSError, subprocess.SubprocessError):
        pass
    for name in ("PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL"):
        found += [v for v in os.environ.get(name, "").split() if _web(v)]
    if not found:
        with suppress(Exception):
            from pip._internal.models.index import PyPI  # the default pip itself uses

            found += [PyPI.url, f"https://{PyPI.file_storage_domain}"]
    # npm: ``npm config get registry`` answers the default when none is configured.
    try:
        done = subprocess.run(
            ["npm", "config", "get", "registry"],
            capture_output=True,
            text=True,
            timeout=20,
            check=False,
        )
        value = done.stdout.strip()
        if _web(value):
            found.append(value)
    except (OSError, subprocess.SubprocessError):
        pass
    return tuple(dict.fromkeys(found))


def _web(url: str) -> bool:
    """An index setup can reach through the proxy (a ``file://`` one it cannot)."""
    return url.startswith(("http://", "https://"))


@dataclass(slots=True)
class EgressStats:
    allowed: dict[str, int] = field(default_factory=dict)  # host:port → requests
    refused: dict[str, int] = field(default_factory=dict)


class EgressProxy:
    """The proxy for one setup run, on ``socket_path`` (the run's relay socket)."""

    def __init__(
        self,
        socket_path: Path,
        allow: Allow,
        *,
        peer_uids: frozenset[int] = frozenset(),
        log_path: Path | None = None,
    ) -> None:
        self.socket_path = socket_path
        self.allow = allow
        self.peer_uids = frozenset({os.geteuid()}) | peer_uids
        self.log_path = log_path
        self.stats = EgressStats()
        self._server: asyncio.AbstractServer | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    async def start(self) -> None:
        if self._server is not None:
            raise RuntimeError("egress proxy already started")
        self.socket_path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        with suppress(FileNotFoundError):
            self.socket_path.unlink()
        self._server = await asyncio.start_unix_server(
            self._accept, str(self.socket_path), limit=HEAD_MAX
        )
        me = os.geteuid()
        others = self.peer_uids - {me}
        if len(others) == 1 and me == 0:
            os.chown(self.socket_path, next(iter(others)), -1)
        shared = len(others) > 1 or (bool(others) and me != 0)
        os.chmod(self.socket_path, 0o666 if shared else 0o600)

    async def stop(self) -> None:
        server, self._server = self._server, None
        if server is not None:
            server.close()
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
        if server is not None:
            with suppress(Exception):
                await server.wait_closed()
        with suppress(FileNotFoundError):
            self.socket_path.unlink()

    async def __aenter__(self) -> EgressProxy:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    # -- one connection --------------------------------------------------------------
    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is None:
            writer.close()
            return
        if len(self._tasks) >= MAX_CONNECTIONS or not self._admits(writer):
            writer.close()
            return
        self._tasks.add(task)
        try:
            await self._serve(reader, writer)
        except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, TimeoutError):
            pass
        finally:
            self._tasks.discard(task)
            writer.close()

    def _admits(self, writer: asyncio.StreamWriter) -> bool:
        sock = writer.get_extra_info("socket")
        try:
            creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
            _pid, uid, _gid = struct.unpack("3i", creds)
        except (AttributeError, OSError, struct.error):
            return False
        if uid not in self.peer_uids:
            log.warning("egress %s: refused a connection as uid %d", self.socket_path, uid)
            return False
        return True

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        async with asyncio.timeout(HEAD_TIMEOUT):
            head = await reader.readuntil(b"\r\n\r\n")
        line, _, rest = head.decode("latin-1").partition("\r\n")
        parts = line.split(" ")
        if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
            await _answer(writer, 400, "not an HTTP/1 proxy request")
            return
        method, target, version = parts
        if method == "CONNECT":
            host, port = _split_authority(target, 443)
            if host is None or not self._check(host, port):
                await _answer(writer, 403, f"{target[:100]} is not an allowed registry")
                return
            upstream = await self._open(host, port, writer)
            if upstream is None:
                return
            writer.write(b"HTTP/1.1 200 Connection Established\r\n\r\n")
            await writer.drain()
            await _pipe_both(reader, writer, *upstream)
            return
        parsed = urlsplit(target)
        if parsed.scheme != "http" or not parsed.hostname:
            await _answer(writer, 400, "only CONNECT or an absolute http:// URL")
            return
        try:
            port = parsed.port or 80
        except ValueError:
            await _answer(writer, 400, "bad port")
            return
        if not self._check(parsed.hostname, port):
            await _answer(writer, 403, f"{parsed.hostname}:{port} is not an allowed registry")
            return
        upstream = await self._open(parsed.hostname, port, writer)
        if upstream is None:
            return
        path = parsed.path or "/"
        if parsed.query:
            path += "?" + parsed.query
        headers = [
            h for h in rest.split("\r\n") if h and h.split(":", 1)[0].strip().lower() not in HOP
        ]
        out = f"{method} {path} {version}\r\n" + "".join(h + "\r\n" for h in headers)
        out += "Connection: close\r\n\r\n"
        up_reader, up_writer = upstream
        up_writer.write(out.encode("latin-1"))
        await _pipe_both(reader, writer, up_reader, up_writer)

    def _check(self, host: str, port: int) -> bool:
        key = f"{_norm(host)}:{port}"
        ok = self.allow.permits(host, port)
        book = self.stats.allowed if ok else self.stats.refused
        book[key] = book.get(key, 0) + 1
        if not ok:
            log.warning("egress: refused %s (not an allowed registry)", key)
        self._log(key, ok)
        return ok

    def _log(self, target: str, ok: bool) -> None:
        if self.log_path is None:
            return
        line = json.dumps({"at": time.time(), "target": target, "allowed": ok})
        with suppress(OSError), open(self.log_path, "a", encoding="utf-8") as out:
            out.write(line + "\n")

    async def _open(
        self, host: str, port: int, writer: asyncio.StreamWriter
    ) -> tuple[asyncio.StreamReader, asyncio.StreamWriter] | None:
        try:
            async with asyncio.timeout(CONNECT_TIMEOUT):
                return await asyncio.open_connection(host, port)
        except (OSError, TimeoutError) as err:
            await _answer(writer, 502, f"could not reach {host}:{port}: {err}")
            return None


def _split_authority(target: str, default: int) -> tuple[str | None, int]:
    host, sep, port_text = target.rpartition(":")
    if not sep:
        return target or None, default
    if not port_text.isdigit() or not 0 < int(port_text) < 65536:
        return None, default
    return (host or None), int(port_text)


async def _answer(writer: asyncio.StreamWriter, status: int, why: str) -> None:
    reason = {400: "Bad Request", 403: "Forbidden", 502: "Bad Gateway"}[status]
    body = f"fetch setup proxy: {why}\n".encode()
    writer.write(
        f"HTTP/1.1 {status} {reason}\r\nContent-Type: text/plain\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode()
        + body
    )
    with suppress(OSError):
        await writer.drain()


async def _pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
    try:
        while True:
            async with asyncio.timeout(IDLE_TIMEOUT):
                data = await src.read(CHUNK)
            if not data:
                break
            dst.write(data)
            await dst.drain()
    finally:
        with suppress(OSError):
            if dst.can_write_eof():
                dst.write_eof()


async def _pipe_both(
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
    up_reader: asyncio.StreamReader,
    up_writer: asyncio.StreamWriter,
) -> None:
    try:
        results = await asyncio.gather(
            _pipe(reader, up_writer), _pipe(up_reader, writer), return_exceptions=True
        )
        del results  # a side that broke ends the tunnel; nothing to report
    finally:
        up_writer.close()


__all__ = ["Allow", "EgressProxy", "Refusal", "default_registries", "parse_allow"]
