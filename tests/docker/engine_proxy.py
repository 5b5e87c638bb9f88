"""A stand-in for a Docker engine that stops: a unix-socket proxy of the tests' own in front
of the real engine's socket. Fetch's Docker SDK talks to it (DOCKER_HOST); ``stop()`` drops
every open connection and closes each new one unanswered, as an engine going down does,
while the shared engine (and every other test's kennels) runs on; ``start()`` brings it
back. (The socket file stays: the Docker SDK leaks a socket for each connect that fails.)"""

from __future__ import annotations

import os
import socket
import threading
from contextlib import suppress
from pathlib import Path


def engine_socket() -> str:
    """The real engine's unix socket (DOCKER_HOST when it names one)."""
    host = os.environ.get("DOCKER_HOST", "")
    return host.removeprefix("unix://") if host.startswith("unix://") else "/var/run/docker.sock"


class EngineProxy:
    def __init__(self, path: Path, upstream: str | None = None) -> None:
        self.path = path
        self.upstream = upstream or engine_socket()
        self._listener: socket.socket | None = None
        self.down = False
        self._open: set[socket.socket] = set()
        self._lock = threading.Lock()

    @property
    def url(self) -> str:
        return f"unix://{self.path}"

    def start(self) -> None:
        if self._listener is None:
            listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            listener.bind(str(self.path))
            listener.listen(64)
            self._listener = listener
            threading.Thread(target=self._accept, args=(listener,), daemon=True).start()
        self.down = False

    def stop(self) -> None:
        """Every connection dropped, every new one closed unanswered."""
        self.down = True
        with self._lock:
            conns = set(self._open)
        for conn in conns:  # their pipes end, and close them
            with suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)

    def close(self) -> None:
        self.stop()
        listener, self._listener = self._listener, None
        if listener is not None:
            with suppress(OSError):
                listener.shutdown(socket.SHUT_RDWR)
            listener.close()
        with suppress(FileNotFoundError):
            self.path.unlink()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            if self.down:
                client.close()
                continue
            upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                upstream.connect(self.upstream)
            except OSError:
                client.close()
                continue
            with self._lock:
                self._open.update((client, upstream))
            threading.Thread(target=self._pair, args=(client, upstream), daemon=True).start()

    def _pair(self, client: socket.socket, upstream: socket.socket) -> None:
        back = threading.Thread(target=self._pipe, args=(upstream, client), daemon=True)
        back.start()
        self._pipe(client, upstream)
        back.join()
        with self._lock:
            self._open.difference_update((client, upstream))
        client.close()
        upstream.close()

    def _pipe(self, src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
            dst.shutdown(socket.SHUT_WR)  # a half-close passes through
        except OSError:
            # A side broke: end the other too, as a dropped engine connection would.
            for s in (src, dst):
                with suppress(OSError):
                    s.shutdown(socket.SHUT_RDWR)
