"""An exec's framed output is read as it comes (kennel/exec_stream.py): over TLS, a
frame already decrypted into the SSL buffer is given at once, not when the engine next
sends (docker-py's reader polls the descriptor first, and waited for the run's end).
Real sockets: a socketpair, and a TLS listener on 127.0.0.1 with the tests' own
certificates (the second engine's exec stream is checked in
tests/docker/test_remote_engine.py)."""

from __future__ import annotations

import queue
import socket
import ssl
import struct
import threading
from pathlib import Path

from kennel.exec_stream import frames
from tests.docker.remote_daemon import make_certs


def frame(stream: int, data: bytes) -> bytes:
    return struct.pack(">BxxxL", stream, len(data)) + data


def test_frames_split_anywhere_come_out_whole_and_a_cut_one_as_far_as_it_came() -> None:
    left, right = socket.socketpair()
    wire = frame(1, b"made\n") + frame(2, b"oops\n") + frame(1, b"x" * 100_000)
    wire += frame(1, b"cut short")[:-3]

    def send() -> None:
        right.sendall(wire)
        right.close()

    reader = threading.Thread(target=send)
    reader.start()
    try:
        got: dict[int, bytes] = {1: b"", 2: b""}
        for stream, data in frames(left):
            got[stream] += data
        assert got[2] == b"oops\n"
        assert got[1] == b"made\n" + b"x" * 100_000 + b"cut sh"
    finally:
        reader.join()
        left.close()


def test_over_tls_a_frame_in_the_ssl_buffer_is_given_without_waiting(tmp_path: Path) -> None:
    certs = tmp_path / "certs"
    make_certs(certs)
    server_ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH, cafile=certs / "ca.pem")
    server_ctx.load_cert_chain(certs / "server-cert.pem", certs / "server-key.pem")
    client_ctx = ssl.create_default_context(cafile=certs / "ca.pem")
    client_ctx.load_cert_chain(certs / "cert.pem", certs / "key.pem")
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    release = threading.Event()

    def serve() -> None:
        conn, _ = listener.accept()
        with server_ctx.wrap_socket(conn, server_side=True) as tls:
            # Two frames in one TLS record, then nothing until the test is done.
            tls.sendall(frame(1, b"made\n") + frame(1, b"two\n"))
            release.wait(30)

    server = threading.Thread(target=serve)
    server.start()
    raw = socket.create_connection(("127.0.0.1", port))
    tls = client_ctx.wrap_socket(raw, server_hostname="127.0.0.1")
    got: queue.Queue[bytes] = queue.Queue()

    def read() -> None:
        try:
            for _stream, data in frames(tls):
                got.put(data)
        except OSError:
            pass

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        assert got.get(timeout=10) == b"made\n"
        assert got.get(timeout=10) == b"two\n"  # was in the SSL buffer: no new bytes came
    finally:
        release.set()
        server.join()
        tls.close()
        listener.close()
        reader.join(10)
