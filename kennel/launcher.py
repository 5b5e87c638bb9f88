"""Runs inside the kennel: bring loopback up, forward a TCP port to the relay socket, exec.

Standard library only, because it runs before anything else exists in a fresh network
namespace. Usage::

    python launcher.py --port 4100 --socket /run/relay.sock -- claude -p ...

The CLI then talks to ``http://127.0.0.1:4100`` and every byte goes through the unix
socket to the host-side relay: no other network exists in the namespace.
"""

from __future__ import annotations

import _socket
import os
import signal
import sys

# This runs before every CLI, so it imports next to nothing: argparse, subprocess,
# socket or contextlib would each add milliseconds (enum, selectors,
# collections...) to every start (bench/kennel_start.py). The C modules suffice.
Sock = _socket.socket

SIOCGIFFLAGS = 0x8913
SIOCSIFFLAGS = 0x8914
IFF_UP = 0x1


def loopback_up() -> None:
    import fcntl
    import struct

    s = Sock(_socket.AF_INET, _socket.SOCK_DGRAM)
    try:
        req = struct.pack("16sH", b"lo", 0)
        flags = struct.unpack("16sH", fcntl.ioctl(s.fileno(), SIOCGIFFLAGS, req)[:18])[1]
        if not flags & IFF_UP:
            fcntl.ioctl(s.fileno(), SIOCSIFFLAGS, struct.pack("16sH", b"lo", flags | IFF_UP))
    finally:
        s.close()


def _pipe(src: Sock, dst: Sock) -> None:
    try:
        while chunk := src.recv(65536):
            dst.sendall(chunk)
    except OSError:
        pass
    for sock in (src, dst):
        try:  # noqa: SIM105 - contextlib costs an import
            sock.shutdown(_socket.SHUT_RDWR)
        except OSError:
            pass


def _serve(listener: Sock, target: str) -> None:
    import threading

    while True:
        fd, _ = listener._accept()  # type: ignore[attr-defined]  # the C accept: an fd
        conn = Sock(fileno=fd)
        upstream = Sock(_socket.AF_UNIX, _socket.SOCK_STREAM)
        try:
            upstream.connect(target)
        except OSError:
            conn.close()
            upstream.close()
            continue
        for a, b in ((conn, upstream), (upstream, conn)):
            threading.Thread(target=_pipe, args=(a, b), daemon=True).start()


def _forward(port: int, target: str) -> None:
    import threading

    listener = Sock(_socket.AF_INET, _socket.SOCK_STREAM)
    listener.setsockopt(_socket.SOL_SOCKET, _socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", port))
    listener.listen(64)
    threading.Thread(target=_serve, args=(listener, target), daemon=True).start()


def parse(argv: list[str]) -> tuple[int, str, bool, list[str]]:
    """``[--port N] [--socket PATH] [--netns] [--] cmd...`` -> (port, socket, netns, cmd)."""
    port, target, netns = 0, "", False
    rest = list(argv)
    while rest and rest[0] != "--" and rest[0].startswith("--"):
        flag = rest.pop(0)
        if flag == "--netns":
            netns = True
        elif flag in ("--port", "--socket") and rest:
            value = rest.pop(0)
            if flag == "--port":
                port = int(value)
            else:
                target = value
        else:
            raise SystemExit(f"launcher: unknown option {flag}")
    if rest[:1] == ["--"]:
        rest = rest[1:]
    return port, target, netns, rest


def main(argv: list[str]) -> int:
    port, target, netns, cmd = parse(argv)
    if not cmd:
        print("launcher: no command", file=sys.stderr)
        return 2
    if netns:
        loopback_up()
    if port and target:
        _forward(port, target)
    null = os.open(os.devnull, os.O_RDONLY)
    try:
        child = os.posix_spawnp(
            cmd[0],
            cmd,
            os.environ,
            file_actions=[(os.POSIX_SPAWN_DUP2, null, 0), (os.POSIX_SPAWN_CLOSE, null)],
        )
    except OSError as err:
        print(f"launcher: {cmd[0]}: {err.strerror}", file=sys.stderr)
        return 127
    finally:
        os.close(null)

    def forward(signum: int, _frame: object) -> None:
        # The whole group usually gets the signal too; forwarding covers a direct kill.
        try:  # noqa: SIM105 - contextlib costs an import
            os.kill(child, signum)
        except ProcessLookupError:
            pass

    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, forward)
    while True:
        try:
            _, status = os.waitpid(child, 0)
            break
        except InterruptedError:
            continue
    code = os.waitstatus_to_exitcode(status)
    return code if code >= 0 else 128 - code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
