"""Runs inside the kennel: bring loopback up, forward a TCP port to the relay socket, exec.

Standard library only, because it runs before anything else exists in a fresh network
namespace. Usage::

    python launcher.py --port 4100 --socket /run/relay.sock [--new-keyring] \
        [--rlimit nproc=512 --rlimit data=4294967296 ...] -- claude -p ...

``--rlimit NAME=N`` lowers that limit (soft and hard) for itself and so for everything the
CLI starts (kennel/limits.py says which and why). ``--new-keyring`` joins a new, empty
session keyring: the one inherited from Fetch (a login's, or a container's) stays
reachable through "possession" even from another user namespace (measured), so the CLI
must not keep it.

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


# keyctl(2) by machine (glibc has no wrapper); KEYCTL_JOIN_SESSION_KEYRING is 1.
KEYCTL = {"x86_64": 250, "aarch64": 219, "riscv64": 219, "i686": 288, "i386": 288,
          "armv7l": 311, "ppc64le": 271, "ppc64": 271, "s390x": 280}  # fmt: skip
RLIMITS = {"nproc": "RLIMIT_NPROC", "data": "RLIMIT_DATA", "cpu": "RLIMIT_CPU",
           "fsize": "RLIMIT_FSIZE", "as": "RLIMIT_AS"}  # fmt: skip


class Options:
    def __init__(self) -> None:
        self.port = 0
        self.target = ""
        self.netns = False
        self.new_keyring = False
        self.stdin = False
        self.rlimits: dict[str, int] = {}


def parse_options(argv: list[str]) -> tuple[Options, list[str]]:
    """``[--port N] [--socket PATH] [--netns] [--new-keyring] [--stdin] [--rlimit NAME=N]... [--]
    cmd...`` -> (options, cmd)."""
    opts = Options()
    rest = list(argv)
    while rest and rest[0] != "--" and rest[0].startswith("--"):
        flag = rest.pop(0)
        if flag == "--netns":
            opts.netns = True
        elif flag == "--new-keyring":
            opts.new_keyring = True
        elif flag == "--stdin":
            opts.stdin = True
        elif flag in ("--port", "--socket", "--rlimit") and rest:
            value = rest.pop(0)
            if flag == "--port":
                opts.port = int(value)
            elif flag == "--socket":
                opts.target = value
            else:
                name, _, number = value.partition("=")
                if name not in RLIMITS or not number.isdigit():
                    raise SystemExit(f"launcher: bad --rlimit {value}")
                opts.rlimits[name] = int(number)
        else:
            raise SystemExit(f"launcher: unknown option {flag}")
    if rest[:1] == ["--"]:
        rest = rest[1:]
    return opts, rest


def parse(argv: list[str]) -> tuple[int, str, bool, list[str]]:
    """``[--port N] [--socket PATH] [--netns] [--] cmd...`` -> (port, socket, netns, cmd)."""
    opts, cmd = parse_options(argv)
    return opts.port, opts.target, opts.netns, cmd


def set_rlimits(limits: dict[str, int]) -> None:
    """Lower each limit, soft and hard (never above the hard limit it has already). CPU's
    hard limit is a few seconds above the soft one: SIGXCPU first, then SIGKILL."""
    import resource

    for name, value in limits.items():
        which = getattr(resource, RLIMITS[name])
        _soft, hard = resource.getrlimit(which)
        top = value + 5 if name == "cpu" else value
        if hard != resource.RLIM_INFINITY:
            value, top = min(value, hard), min(top, hard)
        resource.setrlimit(which, (value, top))


def new_session_keyring() -> None:
    """Join a new anonymous session keyring (keyctl(KEYCTL_JOIN_SESSION_KEYRING, NULL)).
    A kernel without keys (ENOSYS) has nothing to share; anything else is fatal."""
    import ctypes

    number = KEYCTL.get(os.uname().machine)
    if number is None:
        raise OSError(0, f"no keyctl syscall number known for {os.uname().machine}")
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    if libc.syscall(ctypes.c_long(number), ctypes.c_long(1), ctypes.c_void_p(None)) < 0:
        err = ctypes.get_errno()
        if err != 38:  # ENOSYS
            raise OSError(err, os.strerror(err))


def main(argv: list[str]) -> int:
    opts, cmd = parse_options(argv)
    port, target, netns = opts.port, opts.target, opts.netns
    if not cmd:
        print("launcher: no command", file=sys.stderr)
        return 2
    try:
        if opts.new_keyring:
            new_session_keyring()
        if opts.rlimits:
            set_rlimits(opts.rlimits)
    except (OSError, ValueError) as err:
        print(f"launcher: cannot confine the CLI: {err}", file=sys.stderr)
        return 126
    if netns:
        loopback_up()
    if port and target:
        _forward(port, target)
    null = os.open(os.devnull, os.O_RDONLY)
    # A CLI reads no input (its stdin is /dev/null); a stdio server (--stdin) lives on it.
    actions = [] if opts.stdin else [(os.POSIX_SPAWN_DUP2, null, 0)]
    try:
        child = os.posix_spawnp(
            cmd[0], cmd, os.environ, file_actions=[*actions, (os.POSIX_SPAWN_CLOSE, null)]
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
