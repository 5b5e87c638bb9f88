"""The local kennel: the CLI runs on this host in its own process group and, where the
kernel allows, in a private network namespace whose only way out is the relay socket.

This is the backend for machines without Docker. It does not hide host files or drop
privileges: ``isolation()`` says so plainly, and the Docker backend exists for that.
"""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import sys
from functools import cache
from pathlib import Path

from kennel import launcher
from kennel.base import ExecSpec
from kennel.process import MAX_LINE, GroupProcess
from orchestrator.errors import KennelError


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


class LocalKennel:
    name = "local"

    def __init__(self, network_isolation: str = "auto") -> None:
        self._mode = network_isolation

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
            return f"local, refusing to run: {err}"
        if netns:
            return ("local: own process group and private network namespace (model relay "
                    "only); host files and user are NOT isolated")
        return ("local: own process group only; host network, files and user are NOT "
                "isolated")

    async def exec(self, spec: ExecSpec) -> GroupProcess:
        netns = self.uses_netns()
        argv: list[str] = []
        if netns:
            argv += _unshare_argv()
        argv += [sys.executable, "-I", launcher.__file__]
        if netns:
            argv.append("--netns")
        if spec.relay_socket is not None and spec.relay_port:
            argv += ["--port", str(spec.relay_port), "--socket", str(spec.relay_socket)]
        argv += ["--", *spec.argv]
        spec.state_dir.mkdir(parents=True, exist_ok=True)
        try:
            proc = await asyncio.create_subprocess_exec(
                *argv,
                cwd=str(spec.workdir),
                env=spec.env,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                start_new_session=True,
                limit=MAX_LINE,
            )
        except OSError as err:
            raise KennelError(f"could not start {spec.argv[0]}: {err.strerror}") from err
        return GroupProcess(proc)


def state_dir_for(home: Path, repo: Path) -> Path:
    return home / "kennel" / "local" / repo.name
