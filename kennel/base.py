"""The kennel port: run a coding CLI somewhere isolated and hand back a process.

Harness adapters never know which backend runs them; they build argv/env, the kennel
decides where and how isolated.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol


@dataclass(frozen=True, slots=True)
class ExecSpec:
    argv: tuple[str, ...]
    env: dict[str, str]
    workdir: Path  # host path of the repository the CLI works in
    state_dir: Path  # host path for the CLI's own state (HOME, config, sessions)
    relay_socket: Path | None = None  # host unix socket of the model relay
    relay_port: int = 0  # loopback port the forwarder offers inside the kennel


class KennelProcess(Protocol):
    @property
    def pid(self) -> int: ...

    def lines(self) -> AsyncIterator[str]:
        """stdout, one decoded line at a time (overlong lines are cut, not fatal)."""

    async def wait(self) -> int: ...

    async def terminate(self, grace: float) -> float:
        """End everything the CLI started; return how long it took in seconds."""

    def stderr_tail(self) -> str: ...

    def alive_pids(self) -> list[int]: ...


class Kennel(Protocol):
    name: str

    def isolation(self) -> str:
        """One line a person can read: what this backend protects against."""

    async def exec(self, spec: ExecSpec) -> KennelProcess: ...
