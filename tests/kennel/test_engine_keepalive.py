"""Connections to another Docker engine over TCP carry TCP keepalive (15 s, then every
15 s, 4 tries): a far side that drops off silently ends the relay bridge and the task's
output stream in about 90 s instead of never. A real TLS listener on 127.0.0.1 with the
tests' own certificates; the exec stream is checked against a real second engine in
tests/docker/test_remote_engine.py."""

from __future__ import annotations

import asyncio
import socket
import ssl
from pathlib import Path

from kennel.remote_engine import Engine, keep_alive
from tests.docker.remote_daemon import make_certs
from tests.kennel.tcp_timers import connections_to


async def test_a_tls_connection_to_an_engine_keeps_alive(tmp_path: Path) -> None:
    certs = tmp_path / "certs"
    make_certs(certs)
    server_side = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH, cafile=certs / "ca.pem")
    server_side.load_cert_chain(certs / "server-cert.pem", certs / "server-key.pem")
    accepted = asyncio.Event()

    async def hold(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        accepted.set()
        await reader.read()
        writer.close()

    server = await asyncio.start_server(hold, "127.0.0.1", 0, ssl=server_side)
    port = server.sockets[0].getsockname()[1]
    try:
        engine = Engine.parse(f"tcp://127.0.0.1:{port}", certs, True)
        _reader, writer, close = await engine.connect()
        try:
            await asyncio.wait_for(accepted.wait(), 10)
            sock = writer.get_extra_info("socket")
            assert sock.getsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE) == 1
            assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPIDLE) == 15
            assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPINTVL) == 15
            assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPCNT) == 4
            # The kernel runs its timer once the handshake's last bytes are acknowledged.
            for _ in range(100):
                if connections_to(port) == [True]:
                    break
                await asyncio.sleep(0.02)
            assert connections_to(port) == [True]
        finally:
            await close()
    finally:
        server.close()
        await server.wait_closed()


def test_a_socket_that_is_not_tcp_is_left_as_it_is() -> None:
    left, right = socket.socketpair()
    try:
        assert keep_alive(left) is False
        assert left.getsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE) == 0
        assert keep_alive(object()) is False
    finally:
        left.close()
        right.close()
