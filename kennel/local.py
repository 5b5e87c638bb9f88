"""The unsafe local kennel (``kennel.backend: unsafe-local``): the CLI runs on this host in
its own process group and, where the kernel allows, in a private network namespace whose
only way out is the relay socket.

It hides nothing else: the CLI runs as Fetch's own user, reads and writes every file Fetch
can (FETCH_HOME and its keys included), sees host processes, and what it starts in a new
session may outlive the task. ``isolation()`` says so plainly; the bwrap sandbox
(kennel/bwrap.py) and the Docker kennel exist for that, and only an explicit setting
picks this one.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
from functools import cache
from pathlib import Path

from core.errors import KennelError
from kennel import launcher
from kennel.base import ExecSpec, Layout
from kennel.paths import relay_dir
from kennel.process import GroupProcess, start_group
from kennel.relayed import RelayedProcess, start_relayed

NETNS_RELAY_PORT = 4100


@cache
def netns_available() -> bool:
    """True if ``unshare -n`` works here (root, or unprivileged user namespaces)."""
    unshare = shutil.which("unshare")
    if unshare is None:
        return False
    for argv in ([unshare, "-n", "true"], [unshare, "-rn", "true"]):
        try:
            if subprocess.run(argv, capture_output=True, timeout=5).returncode == 0:
                return True
        except (OSError, subprocess.TimeoutExpired):
            continue
    return False


@cache
def _unshare_argv() -> tuple[str, ...]:
    unshare = shutil.which("unshare") or "unshare"
    probe = subprocess.run([unshare, "-n", "true"], capture_output=True, timeout=5)
    return (unshare, "-n") if probe.returncode == 0 else (unshare, "-rn")


NOT_PROTECTED = (
    "runs as Fetch's own user: it can read and change FETCH_HOME (your keys) "
    "and every file Fetch can, see host processes, and leave processes "
    "running after the task"
)


class LocalKennel:
    name = "unsafe-local"

    def __init__(
        self,
        home: Path,
        network_isolation: str = "auto",
        path_env: str = "/usr/local/bin:/usr/bin:/bin",
    ) -> None:
        self._home = home
        self._mode = network_isolation
        self._path_env = path_env

    host_mounts = True
    steerable = True  # the CLI's stdin can be a pipe (kennel/launcher.py --stdin)

    def owner(self) -> tuple[int, int] | None:
        return None  # the CLI runs as Fetch's own user: the unsafe part of this mode

    def layout(self, tree: Path, harness: str, repo: Path | None = None) -> Layout:
        state = tree.parent / "state" / harness
        if self.uses_netns():
            port = NETNS_RELAY_PORT
        else:
            # Sharing the host's loopback: take a free port rather than a fixed one.
            with socket.socket() as s:
                s.bind(("127.0.0.1", 0))
                port = int(s.getsockname()[1])
        return Layout(
            workdir=tree,
            state_host=state,
            state_seen=state,
            relay_socket=relay_dir(self._home, self.owner()) / "relay.sock",
            relay_port=port,
            path_env=self._path_env,
            attachments_host=tree.parent / "attachments",
            attachments_seen=tree.parent / "attachments",
        )

    async def close(self) -> None:
        return None

    def uses_netns(self) -> bool:
        if self._mode == "off":
            return False
        available = netns_available()
        if self._mode == "required" and not available:
            raise KennelError(
                "kennel.network_isolation is 'required' but unshare -n does not work here;"
                " run as root, enable user namespaces, or use the docker backend"
            )
        return available

    def isolation(self) -> str:
        try:
            netns = self.uses_netns()
        except KennelError as err:
            return f"unsafe-local, refusing to run: {err}"
        if netns:
            return (
                "UNSAFE local: only a process group and a private network namespace "
                f"(model relay only); NOT protected: the CLI {NOT_PROTECTED}"
            )
        return (
            "UNSAFE local: only a process group; NOT protected: the CLI also reaches "
            f"the host network, and {NOT_PROTECTED}"
        )

    async def exec(self, spec: ExecSpec) -> RelayedProcess:
        return await start_relayed(spec, lambda: self._start(spec))

    async def _start(self, spec: ExecSpec) -> GroupProcess:
        netns = self.uses_netns()
        argv: list[str] = []
        if netns:
            argv += _unshare_argv()
        argv += [sys.executable, "-I", "-S", launcher.__file__]
        if netns:
            argv.append("--netns")
        if spec.steer:
            argv.append("--stdin")  # the CLI reads the owner's steering messages
        if spec.forwarded:
            argv += [
                "--port",
                str(spec.layout.relay_port),
                "--socket",
                str(spec.layout.relay_socket),
            ]
        argv += ["--", *spec.argv]
        # The run's state folder was made fresh by the host (orchestrator/boundary/).
        return await start_group(
            argv, cwd=str(spec.repo), env=spec.env, name=spec.argv[0], stdin=spec.steer
        )
