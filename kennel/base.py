"""The kennel port: run a coding CLI somewhere isolated and hand back a process.

Harness adapters never know which backend runs them; they build argv/env for the paths
the kennel's ``layout`` gives, and the kennel decides where and how isolated. The model
relay belongs to the process it serves: ``ExecSpec.relay`` says what it forwards to, and
every backend starts it before the CLI and stops it when the CLI ends (kennel/relayed.py).
"""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from aiohttp import web

    from kennel.relay_signin import ChatGptSignIn

    McpHandler = Callable[[web.Request], Awaitable[web.StreamResponse]]

# Told of every call the relay saw (its relay.jsonl entry: task, model, status,
# latency_ms, tokens): the application's cost ledger. Must not block or raise.
CallHook = Callable[[Mapping[str, Any]], None]
# Asked before each vendor call: a reason to refuse it (a spent budget), or None.
CallGate = Callable[[], str | None]


@dataclass(frozen=True, slots=True)
class Layout:
    """Where things are for one repo and harness, from both sides of the sandbox."""

    workdir: Path  # the run's tree (its layer over the repository) as the CLI sees it
    state_host: Path  # host folder the harness writes its config files into (fresh per turn)
    state_seen: Path  # the same state as the CLI sees it
    relay_socket: Path  # host path the model relay must listen on
    relay_port: int  # loopback port the forwarder offers inside the kennel
    path_env: str  # PATH for the CLI
    # The kennel itself confines writes to the repo and has no network, so a CLI's own
    # sandbox (which needs namespaces an unprivileged container cannot create) may step
    # aside. False on the local backend, where the CLI's own sandbox is what confines it.
    confined: bool = False
    # Files the owner sent with the task (the run's ``attachments/`` beside its tree):
    # the host folder and where the CLI sees it, read-only; None where not shown.
    attachments_host: Path | None = None
    attachments_seen: Path | None = None


@dataclass(frozen=True, slots=True)
class RelaySpec:
    """The model relay a process gets (kennel/relay.py): the kennel starts it on
    ``Layout.relay_socket`` before the process and stops it when the process ends."""

    upstream: str  # the vendor's base URL: the only place requests go
    provider: str  # how the key is sent (anthropic, openai, gemini)
    # The real key: stays on the host, injected into each request (and never in a repr).
    api_key: str | None = field(repr=False)
    harness: str  # for the log
    task_id: int | None  # for the log
    log_path: Path  # relay.jsonl: one line per model call
    token_budget: int = 0  # input + output tokens for the run; 0 = no limit
    # Served on the same socket at /mcp (Fetch's memory), so the kennel needs no other way
    # out; None: no MCP.
    mcp: McpHandler | None = None
    on_call: CallHook | None = None
    gate: CallGate | None = None
    # The only credential the relay accepts from the CLI (its API key, and the bearer of
    # its MCP requests): fresh for every run, so a kennel that outlives its run, or
    # another kennel, holds nothing the relay takes. The harness gets it as the CLI's key.
    secret: str = field(default_factory=lambda: secrets.token_urlsafe(32), repr=False)
    # Uids besides Fetch's own (and those the backend admits, kennel/paths.py) that may
    # connect to the socket; everyone else is hung up on.
    peer_uids: frozenset[int] = frozenset()
    # How ``api_key`` is sent: "api_key" in the vendor's key header, "oauth" as a bearer
    # with the vendor's OAuth flag (a subscription's token: kennel/credentials.py).
    auth: str = "api_key"
    # Vendor-side features the owner keeps (kennel/relay_tools.py FEATURES: web_search,
    # web_fetch, code_execution, mcp, files, image_generation); the rest are removed.
    allow_server_tools: tuple[str, ...] = ()
    # auth "chatgpt": codex's ChatGPT sign-in, whose tokens the relay refreshes on the host
    # (kennel/relay_signin.py ChatGptSignIn); api_key is then None.
    signin: ChatGptSignIn | None = field(default=None, repr=False, compare=False)


@dataclass(frozen=True, slots=True)
class EgressSpec:
    """A setup run's way out (kennel/egress.py): instead of the model relay, the run's
    socket serves an HTTP proxy that reaches only these registries."""

    allow: tuple[str, ...]  # host, host:port or a registry's URL
    log_path: Path | None = None  # one JSON line per request, allowed or refused


@dataclass(frozen=True, slots=True)
class ExecSpec:
    argv: tuple[str, ...]
    env: dict[str, str]
    # Host path of the run's tree: its own layer over the repository
    # (orchestrator/boundary/layer.py), ``<runs>/<repo>/<run>/tree``; never the owner's.
    repo: Path
    layout: Layout
    relay: RelaySpec | None = None  # None: the CLI needs no model (the demo harness)
    # The owner's ``.git``, shown read-only at ``<workdir>/.git`` where the backend can
    # (bwrap); None: the CLI sees no repository metadata.
    git: Path | None = None
    # A setup run only (never with ``relay``): package registries through the proxy.
    egress: EgressSpec | None = None
    # The CLI's stdin is a pipe Fetch writes (``KennelProcess.write_input``): the owner's
    # messages reach a running CLI that reads them (steering); else it is /dev/null.
    steer: bool = False

    @property
    def forwarded(self) -> bool:
        """Whether the kennel's loopback port leads to the run's socket."""
        return self.relay is not None or self.egress is not None


class BackendProcess(Protocol):
    """What a backend's own process offers (GroupProcess, DockerProcess); the relay and
    the run's cgroups wrap it into a ``KennelProcess``."""

    def lines(self) -> AsyncIterator[str]: ...

    async def wait(self) -> int: ...

    async def terminate(self, grace: float) -> float: ...

    def stderr_tail(self) -> str: ...

    def alive_pids(self) -> list[int]: ...

    async def pause(self) -> int: ...

    async def resume(self) -> None: ...

    async def write_input(self, data: bytes) -> bool: ...

    def close_input(self) -> None: ...


class KennelProcess(Protocol):
    def lines(self) -> AsyncIterator[str]:
        """stdout, one decoded line at a time (overlong lines are cut, not fatal)."""

    async def wait(self) -> int: ...

    async def terminate(self, grace: float) -> float:
        """End everything the CLI started; return how long it took in seconds."""

    def stderr_tail(self) -> str: ...

    def alive_pids(self) -> list[int]: ...

    async def pause(self) -> int:
        """Stop (SIGSTOP) every process of the run, so it uses no CPU and makes no model
        call until ``resume``; return how many processes were stopped."""

    async def resume(self) -> None:
        """Continue (SIGCONT) everything ``pause`` stopped."""

    async def write_input(self, data: bytes) -> bool:
        """Write ``data`` to the CLI's stdin (started with ``ExecSpec.steer``); False when
        it has no such pipe, or the pipe is closed or broken (the CLI has ended)."""

    def close_input(self) -> None:
        """Close the CLI's stdin (end of its input: a CLI that reads it then ends)."""

    def relay_tokens(self) -> tuple[int, int]:
        """Input and output tokens the relay counted for this process ((0, 0) without
        one): some CLIs report no usage themselves."""


class Kennel(Protocol):
    name: str

    @property
    def host_mounts(self) -> bool:
        """True when a mount the host makes below a run's folder is what the CLI sees
        (so the run's tree may be an overlay); False: the tree must be a copy."""

    def isolation(self) -> str:
        """One line a person can read: what this backend protects against."""

    @property
    def steerable(self) -> bool:
        """True when a run's CLI can be given a stdin pipe (``ExecSpec.steer``)."""

    def owner(self) -> tuple[int, int] | None:
        """The uid:gid the CLI runs as, when it is not Fetch's own: the run's folders
        are handed to it (and only they)."""

    def layout(self, tree: Path, harness: str, repo: Path | None = None) -> Layout:
        """Where things are for a run whose tree is at host path ``tree``
        (``<runs>/<repo>/<run>/tree``; its CLI state lives in ``<run>/state/<harness>``).
        ``repo``: the owner's repository, whose path a backend may show the tree at."""

    async def exec(self, spec: ExecSpec) -> KennelProcess: ...

    async def close(self) -> None:
        """Release everything started (containers); the app calls it on shutdown."""
