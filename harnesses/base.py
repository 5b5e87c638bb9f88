"""The harness port: how to start one coding CLI headless and read what it says.

An adapter never runs anything itself. It turns a ``HarnessRequest`` into argv/env for
the kennel and turns each stdout line into ``HarnessEvent``s. Success is judged from
the final event, never from the exit code: every CLI exits 0 on a denied edit.
"""

from __future__ import annotations

import json
import shutil
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Literal

from core.errors import UnknownHarness

# "question": the CLI ended its turn asking the owner (text); the runner WAITS for the
# answer and resumes the CLI's session with it (orchestrator/task/runner.py).
# "input": the CLI took a message written to its stdin (steering: the prompt, then what
# the owner sent while it ran; orchestrator/task/steer.py).
EventKind = Literal[
    "session", "text", "tool_use", "file_change", "usage", "done", "error", "question", "input"
]


@dataclass(frozen=True, slots=True)
class HarnessEvent:
    kind: EventKind
    text: str = ""
    data: dict[str, Any] = field(default_factory=dict)


def usage_event(counts: Any, **extra: float) -> HarnessEvent:
    """A ``usage`` event from the object a CLI reports its tokens in (``input_tokens``,
    ``output_tokens``; missing or null counts as 0), plus e.g. ``cost_usd``."""
    counts = counts if isinstance(counts, dict) else {}
    return HarnessEvent(
        "usage",
        data={
            "tokens_in": int(counts.get("input_tokens") or 0),
            "tokens_out": int(counts.get("output_tokens") or 0),
            **extra,
        },
    )


@dataclass(frozen=True, slots=True)
class McpServer:
    """An MCP server the CLI may use through the relay: Fetch's memory, or one of the
    owner's."""

    name: str  # what the CLI calls it (its tools become mcp__<name>__...)
    url: str  # as the CLI reaches it, e.g. http://127.0.0.1:4100/mcp


# What the CLIs accept as an image attached to a prompt (codex --image, copilot --attachment).
IMAGE_SUFFIXES = frozenset({".png", ".jpg", ".jpeg", ".webp", ".gif"})


@dataclass(frozen=True, slots=True)
class HarnessRequest:
    """Everything an adapter needs for one run; the runner fills it in, so adapters know
    nothing of the relay or of memory beyond what is here."""

    prompt: str
    workdir: Path  # as the CLI sees it
    state_dir: Path  # as the CLI sees it: HOME and config live here, per workspace
    model_url: str | None  # the relay as the CLI reaches it, e.g. http://127.0.0.1:4100
    # The only key the CLI ever holds: the relay drops it and injects the real one.
    placeholder_key: str
    path_env: str = "/usr/local/bin:/usr/bin:/bin"
    model: str | None = None
    resume: str | None = None
    max_retries: int = 0
    confined: bool = False  # see kennel.base.Layout.confined
    kennel: str = "local"  # the backend's name: "docker" runs the image's tools, not the host's
    mcp: McpServer | None = None  # None when memory is off or the run has no relay
    # The owner's own MCP servers (orchestrator/mcphost/), on the same relay at
    # /mcp/<name>: every call is decided on the host, so the CLI may call them unasked.
    more_mcp: tuple[McpServer, ...] = ()
    # The relay holds a subscription's token, not an API key (kennel/credentials.py): a
    # CLI that tells them apart (Claude Code) gets the run's secret in the token's place.
    subscription: bool = False
    # A ChatGPT sign-in's account and plan (codex): not secrets, but its stand-in auth file
    # must name them as the real one does (harnesses/codex.py). "" without a sign-in.
    signin_account: str = ""
    signin_plan: str = ""

    @property
    def mcp_servers(self) -> tuple[McpServer, ...]:
        """Every MCP server of the run: Fetch's memory first, then the owner's."""
        return ((self.mcp,) if self.mcp is not None else ()) + self.more_mcp

    # Standing instructions for this run (the pack member's, issue 14): each adapter
    # writes them where its CLI reads user-level instructions (CLAUDE.md, GEMINI.md,
    # AGENTS.md ...) under ``state_dir``, never into the repository.
    instructions: str = ""
    # Skills handed to the CLI, (name, description, body) each, in the CLI's own format.
    skills: tuple[tuple[str, str, str], ...] = ()
    # The prompt goes to the CLI's stdin (``Harness.input_line``), which stays open for
    # the owner's messages while it runs; only for a ``steerable`` harness in a kennel
    # that passes stdin on.
    steer: bool = False
    # Files the owner sent with the task, as the CLI sees them (read-only, outside the
    # repository); the prompt names each. A CLI that must be told it may read a folder
    # outside its workdir is told here (Claude Code: --add-dir).
    attachments: tuple[Path, ...] = ()

    @property
    def attached_images(self) -> tuple[Path, ...]:
        """The attachments a CLI can take as images on its first prompt."""
        return tuple(p for p in self.attachments if p.suffix.lower() in IMAGE_SUFFIXES)


@dataclass(frozen=True, slots=True)
class Availability:
    installed: bool
    credentials: bool
    detail: str

    @property
    def usable(self) -> bool:
        return self.installed and self.credentials


_CATALOG: dict[str, type[Harness]] = {}


class Harness(ABC):
    name: ClassVar[str]
    provider: ClassVar[str | None]  # which relay upstream it needs; None = no model
    binary: ClassVar[str]
    summary: ClassVar[str]
    # The CLI reads messages on stdin while it runs (``input_line``) and says when it took
    # each (an ``input`` event); the others get what is sent meanwhile after the task.
    steerable: ClassVar[bool] = False
    # /model: names this CLI takes for its model, the first its default when none is set
    # (offered on the phone; any other name may still be given, the CLI judges it).
    models: ClassVar[tuple[str, ...]] = ()

    def __init_subclass__(cls, *, name: str, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if name in _CATALOG:
            raise ValueError(f"harness {name!r} is defined twice")
        cls.name = name
        _CATALOG[name] = cls

    def input_line(self, text: str) -> bytes:
        """One message for the CLI's stdin (``steerable`` harnesses only)."""
        raise NotImplementedError(f"{self.name} reads no input while it runs")

    def executable(self) -> str | None:
        return shutil.which(self.binary)

    def prepare(self, req: HarnessRequest, host_state_dir: Path) -> None:  # noqa: B027
        """Write the CLI's own config files (settings.json, config.toml...) before a run.

        ``host_state_dir`` is where ``req.state_dir`` lives on the host: the kennel may
        show the same folder to the CLI under another path. Default: nothing to write.
        """

    @abstractmethod
    def command(self, req: HarnessRequest) -> tuple[list[str], dict[str, str]]:
        """argv and the *complete* environment (nothing from the host leaks in)."""

    def parse(self, line: str) -> list[HarnessEvent]:
        """Events for one stdout line; lines that are not events give ``[]``.

        A JSON object goes to ``event``; a JSON line of an unexpected shape is not an
        event (never a crash); anything else goes to ``plain``."""
        obj = self.json_line(line)
        if obj is None:
            return self.plain(line)
        try:
            return self.event(obj)
        except (AttributeError, TypeError, ValueError):
            return []

    @abstractmethod
    def event(self, obj: dict[str, Any]) -> list[HarnessEvent]:
        """Events for one JSON object the CLI printed."""

    def plain(self, line: str) -> list[HarnessEvent]:
        """Events for a line that is not JSON (most CLIs: none)."""
        return []

    @staticmethod
    def json_line(line: str) -> dict[str, Any] | None:
        line = line.strip()
        if not line.startswith("{"):
            return None
        try:
            parsed = json.loads(line)
        except ValueError:
            return None
        return parsed if isinstance(parsed, dict) else None


class HarnessRegistry:
    """The harnesses this app offers, included explicitly at the composition root."""

    def __init__(self) -> None:
        self._items: dict[str, Harness] = {}

    def add(self, harness: Harness) -> None:
        if harness.name in self._items:
            raise ValueError(f"harness {harness.name!r} already registered")
        self._items[harness.name] = harness

    def get(self, name: str) -> Harness:
        try:
            return self._items[name]
        except KeyError:
            raise UnknownHarness(name, sorted(self._items)) from None

    def names(self) -> list[str]:
        return sorted(self._items)

    def all(self) -> list[Harness]:
        return [self._items[n] for n in self.names()]


def catalog() -> dict[str, type[Harness]]:
    return dict(_CATALOG)
