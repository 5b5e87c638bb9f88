"""The Docker SDK's requests to an engine reached over ssh, like the Docker CLI's
``DOCKER_HOST=ssh://user@host[:port]``: each connection is the system's ``ssh`` running
``docker system dial-stdio`` on the far side, so the owner's ``~/.ssh/config``, keys,
agent and known_hosts apply as they do for the CLI.

The SDK's own ssh transport is not used: it imports paramiko even when it runs the ssh
command, makes a new connection pool per request (an ssh process each, never ended) and
never reaps its ssh processes. Here one pool is kept per engine; a connection whose ssh
has exited is replaced; closing one ends and reaps its ssh.
"""

from __future__ import annotations

import io
import os
import queue
import signal
import socket
import subprocess
from contextlib import suppress
from typing import Any
from urllib.parse import urlsplit

import urllib3.connection
import urllib3.connectionpool
import urllib3.exceptions
from docker.transport.basehttpadapter import BaseHTTPAdapter

SSH_BASE_URL = "http+docker://ssh"  # what docker-py's hijacked streams know ssh by


def ssh_argv(url: str) -> list[str]:
    """``ssh … docker system dial-stdio`` for ``ssh://[user@]host[:port]``: never asks a
    question (no terminal to answer it on). A far side that silently drops off the
    network (no FIN, no RST) is noticed within a minute by ssh's own keepalive, instead
    of leaving the kennel's stream and its task hanging; the owner's ssh config still
    decides everything else."""
    parts = urlsplit(url)
    argv = ["ssh", "-o", "BatchMode=yes", "-o", "ServerAliveInterval=15"]
    argv += ["-o", "ServerAliveCountMax=4"]
    if parts.username:
        argv += ["-l", parts.username]
    if parts.port:
        argv += ["-p", str(parts.port)]
    return [*argv, "--", str(parts.hostname), "docker", "system", "dial-stdio"]


class SshSocket(socket.socket):
    """What urllib3 and docker-py's stream readers use of a socket, over ssh's pipes.

    A socket only in name: the descriptor under it is never connected, so the SDK's
    ``poll`` before each read returns at once and the read goes to ssh's output (whose
    buffer may already hold what the HTTP reader took in)."""

    def __init__(self, argv: list[str]) -> None:
        super().__init__(socket.AF_INET, socket.SOCK_STREAM)
        self._argv = argv
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        self.proc = subprocess.Popen(
            self._argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            # ssh's own complaints (host key, refused key) reach Fetch's log (stderr
            # inherited). A library path set for Python's sake is not ssh's.
            env={k: v for k, v in os.environ.items() if k != "LD_LIBRARY_PATH"},
            start_new_session=True,  # a ^C to Fetch is not ssh's to act on
        )

    def _pipes(self) -> tuple[io.BufferedWriter, io.BufferedReader]:
        if self.proc is None or self.proc.stdin is None or self.proc.stdout is None:
            raise OSError("the ssh connection is not started")
        return self.proc.stdin, self.proc.stdout  # type: ignore[return-value]

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def sendall(self, data: Any, flags: int = 0) -> None:
        stdin, _ = self._pipes()
        stdin.write(data)
        stdin.flush()

    def send(self, data: Any, flags: int = 0) -> int:
        self.sendall(data)
        return len(data)

    def recv(self, n: int, flags: int = 0) -> bytes:
        # What is there, up to n (a socket's recv), not n exactly: a stream's reader
        # would otherwise wait for bytes that are not coming yet.
        return self._pipes()[1].read1(n)

    def makefile(self, *args: Any, **kwargs: Any) -> Any:  # an _Output
        return _Output(self._pipes()[1], self)

    def shutdown(self, how: int) -> None:
        # Ending ssh's input ends the whole dial-stdio stream: only a full shutdown is
        # honoured (how steering over ssh waits for the task's end: kennel.steerable).
        if how == socket.SHUT_RDWR:
            self._end()

    def _end(self) -> None:
        proc, self.proc = self.proc, None
        if proc is None:
            return
        with suppress(OSError):
            if proc.stdin is not None:
                proc.stdin.close()
        if proc.poll() is None:
            with suppress(ProcessLookupError):
                proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(5)
        if proc.stdout is not None:
            proc.stdout.close()

    def close(self) -> None:
        self._end()
        super().close()


class _Output:
    """ssh's output as one response's file: http.client closes that file when the
    response is read, but the next request on this connection reads on from the same
    pipe (and its buffer), so closing it is left to the socket."""

    def __init__(self, reader: io.BufferedReader, channel: SshSocket) -> None:
        self._reader = reader
        self.channel = channel  # where docker-py finds a hijacked stream's socket

    def __getattr__(self, name: str) -> Any:
        found = getattr(self._reader, name)
        if not callable(found):
            return found

        def call(*args: Any, **kwargs: Any) -> Any:
            try:
                return found(*args, **kwargs)
            except ValueError as err:  # read after ssh ended: the connection is gone
                raise ConnectionResetError(f"the ssh connection ended ({err})") from err

        return call

    def flush(self) -> None:
        pass  # read only

    def close(self) -> None:
        pass


class _Connection(urllib3.connection.HTTPConnection):
    def __init__(self, argv: list[str], timeout: float) -> None:
        super().__init__("localhost", timeout=timeout)
        self._argv = argv

    def connect(self) -> None:
        sock = SshSocket(self._argv)
        sock.start()
        self.sock = sock


class _Pool(urllib3.connectionpool.HTTPConnectionPool):
    def __init__(self, argv: list[str], timeout: float, maxsize: int) -> None:
        super().__init__("localhost", timeout=timeout, maxsize=maxsize)
        self._argv = argv
        self._seconds = timeout

    def _new_conn(self) -> _Connection:
        return _Connection(self._argv, self._seconds)

    def _get_conn(self, timeout: float | None = None) -> Any:
        # urllib3's dropped-connection check polls the socket, which says nothing here:
        # whether ssh still runs does.
        conn = None
        try:
            conn = self.pool.get(block=self.block, timeout=timeout)  # type: ignore[union-attr]
        except AttributeError as err:  # the pool is closed
            raise urllib3.exceptions.ClosedPoolError(self, "Pool is closed.") from err
        except queue.Empty:
            if self.block:
                raise urllib3.exceptions.EmptyPoolError(self, "Pool is full.") from None
        if conn is not None and conn.sock is not None and not conn.sock.alive():
            conn.close()
            conn = None
        return conn or self._new_conn()


class SshAdapter(BaseHTTPAdapter):  # type: ignore[misc]
    """Mounted on the SDK's session for ``http+docker://ssh``: one pool, kept."""

    def __init__(self, url: str, timeout: float, max_pool_size: int = 10) -> None:
        super().__init__()
        self._pool = _Pool(ssh_argv(url), timeout, max_pool_size)
        self.pools: dict[str, Any] = {}  # BaseHTTPAdapter.close clears it

    def get_connection(self, url: Any, proxies: Any = None) -> _Pool:
        return self._pool

    def request_url(self, request: Any, proxies: Any) -> str:
        return str(request.path_url)

    def close(self) -> None:
        super().close()
        self._pool.close()


def ssh_client(url: str, version: str, timeout: float) -> Any:
    """A ``docker.DockerClient`` whose requests go through :class:`SshAdapter`."""
    import docker

    # Made for a socket that is never opened (nothing is asked before the first
    # request), then given the ssh adapter in the place the SDK's own would take.
    client = docker.DockerClient(base_url="unix:///nonexistent", version=version, timeout=timeout)
    api = client.api
    adapter = SshAdapter(url, timeout)
    api.mount(SSH_BASE_URL, adapter)
    api._custom_adapter = adapter
    api.base_url = SSH_BASE_URL
    return client


__all__ = ["SSH_BASE_URL", "SshAdapter", "SshSocket", "ssh_argv", "ssh_client"]
