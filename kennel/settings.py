"""The kennel's settings section (``kennel:``) and the model vendors its relay may
forward to (``providers:``)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, field_validator

from core.settings import StrictSettings
from kennel.egress import parse_allow
from kennel.relay_tools import FEATURES


class ProviderSettings(StrictSettings):
    """A model vendor the relay may forward to; the key never leaves the host."""

    base_url: str
    api_key: str | None = None
    # A subscription's token instead of a key (Claude: what `claude setup-token` prints);
    # the relay sends it as a bearer (kennel/credentials.py). A key wins when both are set.
    oauth_token: str | None = None
    # A sign-in's own endpoints (openai: codex's ChatGPT sign-in, kennel/relay_signin.py):
    # the backend its calls go to, and the OAuth token endpoint that refreshes it. None:
    # the vendor's own.
    signin_base_url: str | None = None
    token_url: str | None = None


# A size like Docker's: bytes, or a number with k, m, g or t (powers of 1024).
SIZE = r"^[0-9]+[kmgtKMGT]?$"


def default_providers() -> dict[str, ProviderSettings]:
    return {
        "anthropic": ProviderSettings(base_url="https://api.anthropic.com"),
        "openai": ProviderSettings(base_url="https://api.openai.com/v1"),
        "gemini": ProviderSettings(base_url="https://generativelanguage.googleapis.com"),
    }


class DockerKennelSettings(StrictSettings):
    image: str = "auto"  # "auto": the fetch-kennel:<hash> tag of kennel/Dockerfile
    # Where relay sockets live; must be visible to the Docker host (a volume) when Fetch
    # itself runs in a container. Unset: the system temp folder.
    run_dir: Path | None = None
    memory: str = "2g"
    cpus: float = Field(2.0, gt=0, le=64)
    pids: int = Field(512, ge=32)
    tmpfs_size: str = "1g"
    idle_seconds: float = Field(900.0, ge=5)
    # The uid:gid the CLIs run as; "auto" = a dedicated uid (kennel/owner.py,
    # 65520:65520). Never root, never a login account's uid.
    user: str = "auto"
    # ulimits of every process in the container, beside the cgroup limits above: CPU
    # seconds per process, size of one file, and processes of the task uid. The kernel
    # counts nproc per uid over the whole host (no user namespace here): all Docker
    # kennels' tasks together, a backstop behind ``pids``. Equal to ``pids``, a fork bomb
    # in one repository's kennel would stop the tasks of every other one.
    cpu_seconds: int = Field(3600, ge=10)
    file_size: str = Field("1g", pattern=SIZE)
    nproc: int = Field(2048, ge=32)
    # Another Docker engine for the kennels (kennel/remote.py), named like the Docker
    # CLI's DOCKER_HOST: ssh://user@host, tcp://host:port with TLS (cert_path: a folder
    # with ca.pem, cert.pem, key.pem, like DOCKER_CERT_PATH; tls_verify: check the
    # engine's certificate, like DOCKER_TLS_VERIFY), or unix:///path. Unset, or this
    # machine's own socket: the local engine, with bind mounts.
    host: str | None = None
    cert_path: Path | None = None
    tls_verify: bool = True
    # On a remote engine, the runs' trees live in a memory-backed volume of this size.
    runs_size: str = Field("4g", pattern=SIZE)


class BwrapKennelSettings(StrictSettings):
    # The uid:gid the CLIs run as when Fetch is root; "auto" = a dedicated uid
    # (kennel/owner.py, 65520:65520). Never root, never a login account's uid. (When
    # Fetch is not root: Fetch's own uid.)
    user: str = "auto"
    # Limits on one run (kennel/limits.py): processes of the run, memory (the run's
    # cgroup; per process when there is none), CPU seconds per process, size of one
    # file. cgroups "off": rlimits only.
    processes: int = Field(512, ge=32)
    memory: str = Field("4g", pattern=SIZE)
    cpu_seconds: int = Field(3600, ge=10)
    file_size: str = Field("1g", pattern=SIZE)
    cgroups: Literal["auto", "off"] = "auto"


class SetupSettings(StrictSettings):
    """A repository's committed setup script (``.fetch/setup.sh``), run once per commit
    of it and of its lock files, with package registries only (kennel/egress.py)."""

    enabled: bool = True
    # What the setup run may reach: host, host:port or a registry URL. Unset: the
    # registries this host's pip and npm use (their configured index, else their own
    # default), asked of the tools at start.
    registries: tuple[str, ...] | None = None
    timeout_seconds: float = Field(900.0, ge=10)

    @field_validator("registries")
    @classmethod
    def _hosts(cls, entries: tuple[str, ...] | None) -> tuple[str, ...] | None:
        if entries is not None:
            parse_allow(entries)  # a Refusal (a ValueError) names the bad entry
        return entries


# "auto": docker when its engine answers and the kennel image is there, else bwrap.
# "local" is the old name of the local backend, now the bwrap sandbox. "unsafe-local" is
# the namespace-only mode that hides nothing on the host (kennel/local.py).
Backend = Literal["auto", "docker", "bwrap", "local", "unsafe-local"]


class KennelSettings(StrictSettings):
    backend: Backend = "auto"
    # unsafe-local only: "auto" = a private network namespace when the kernel allows it.
    network_isolation: Literal["auto", "required", "off"] = "auto"
    docker: DockerKennelSettings = DockerKennelSettings()
    bwrap: BwrapKennelSettings = BwrapKennelSettings()
    # Per-task model budget enforced by the relay (input + output tokens); 0 = no limit.
    token_budget: int = Field(2_000_000, ge=0)
    # Vendor-side tools a CLI may use through the relay, on the owner's account (names in
    # kennel/relay_tools.py: web_search, web_fetch, code_execution, mcp, files,
    # image_generation). Empty: none, since each is a way out of a kennel with no network.
    relay_server_tools: tuple[str, ...] = ()
    setup: SetupSettings = SetupSettings()

    @field_validator("relay_server_tools")
    @classmethod
    def _known_tools(cls, names: tuple[str, ...]) -> tuple[str, ...]:
        unknown = sorted(set(names) - FEATURES.keys())
        if unknown:
            raise ValueError(f"unknown {unknown}: choose from {sorted(FEATURES)}")
        return names


__all__ = [
    "Backend",
    "BwrapKennelSettings",
    "DockerKennelSettings",
    "KennelSettings",
    "ProviderSettings",
    "SetupSettings",
    "default_providers",
]
