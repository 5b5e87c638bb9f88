"""Tools the orchestrator model may call, declared once with their JSON schemas.

Each tool is the action ``tool:<name>`` for the permission model: the model is shown
only the tools the sender may use (``schemas_for``), and a call is checked again when it
is made (a model may name a tool it was not shown).

Each tool is also classed for the executor (orchestrator/agent/executor.py): ``read``
tools of one model turn run in parallel, ``write`` tools in order after them; a read
with ``cached`` set has its result cached against the repository's state; ``ask`` is the
auto-approve table (reads and analysis run; writes, git changes and shell ask first).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from core.errors import FetchError

if TYPE_CHECKING:
    from core.events import SessionKey
    from orchestrator.context import Context
    from orchestrator.permissions.model import Subject
    from orchestrator.permissions.service import Permissions

Kind = Literal["read", "write"]


@dataclass(frozen=True, slots=True)
class ToolResult:
    content: str
    final: bool = False  # the turn ends here (work handed off, or a question asked)


ToolHandler = Callable[["Context", dict[str, Any]], Awaitable[ToolResult]]


@dataclass(frozen=True, slots=True)
class Tool:
    name: str
    description: str
    parameters: dict[str, Any]
    handler: ToolHandler
    kind: Kind = "write"  # unknown effects are treated as writes: in order, never cached
    cached: bool = False  # a read whose result depends only on its args and the repo
    ask: bool = False  # the owner says yes before it runs (the auto-approve table)

    def schema(self) -> dict[str, Any]:
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters,
            },
        }


class ToolArgumentError(FetchError):
    pass


class ToolRegistry:
    def __init__(self) -> None:
        self._tools: dict[str, Tool] = {}

    def tool(
        self,
        name: str,
        description: str,
        properties: dict[str, Any],
        required: list[str],
        *,
        kind: Kind = "write",
        cached: bool = False,
        ask: bool = False,
    ) -> Callable[[ToolHandler], ToolHandler]:
        if cached and kind != "read":
            raise ValueError(f"tool {name!r}: only reads are cached")
        if ask and kind != "write":
            raise ValueError(f"tool {name!r}: reads never ask")

        def register(fn: ToolHandler) -> ToolHandler:
            if name in self._tools:
                raise ValueError(f"tool {name!r} registered twice")
            # Kept small: every schema is sent on every request ("Say hello" < 8 KB).
            # Unknown arguments are refused by check_args, so no additionalProperties.
            params: dict[str, Any] = {"type": "object", "properties": properties}
            if required:
                params["required"] = required
            self._tools[name] = Tool(name, description, params, fn, kind, cached, ask)
            return fn

        return register

    def get(self, name: str) -> Tool | None:
        return self._tools.get(name)

    def schemas(self) -> list[dict[str, Any]]:
        return [t.schema() for t in self._tools.values()]

    def visible(self, permissions: Permissions, subject: Subject, key: SessionKey) -> list[Tool]:
        """The tools ``subject`` may use in chat ``key``: what the model is shown, and
        what /tools lists."""
        allowed = set(
            permissions.visible(subject, key, [f"tool:{t.name}" for t in self._tools.values()])
        )
        return [t for t in self._tools.values() if f"tool:{t.name}" in allowed]

    def schemas_for(self, ctx: Context) -> list[dict[str, Any]]:
        """The schemas of the tools ``ctx``'s sender may use in this chat."""
        return [
            t.schema() for t in self.visible(ctx.services.permissions, ctx.subject, ctx.session.key)
        ]

    def names(self) -> list[str]:
        return list(self._tools)


def check_args(tool: Tool, args: object) -> dict[str, Any]:
    """Minimal schema check: an object with the required string fields, nothing else."""
    if not isinstance(args, dict):
        raise ToolArgumentError("arguments must be a JSON object")
    props = tool.parameters["properties"]
    unknown = sorted(set(args) - set(props))
    if unknown:
        raise ToolArgumentError(f"unknown argument(s): {', '.join(unknown)}")
    for name in tool.parameters.get("required", ()):
        if name not in args:
            raise ToolArgumentError(f"missing required argument {name!r}")
    for name, value in args.items():
        if props[name].get("type") == "string" and not isinstance(value, str):
            raise ToolArgumentError(f"argument {name!r} must be a string")
    return args


def build_tools() -> ToolRegistry:
    from orchestrator import memory, scheduler
    from orchestrator.agent.repo_tools import register_tools as register_repo_tools
    from orchestrator.agent.seed_tools import register_tools as register_seed_tools
    from orchestrator.blocks.tools import register_tools as register_block_tools
    from orchestrator.skills.tool import register_tools as register_skill_tools

    registry = ToolRegistry()
    register_seed_tools(registry)
    register_repo_tools(registry)
    scheduler.register_tools(registry)
    memory.register_tools(registry)
    register_skill_tools(registry)
    register_block_tools(registry)
    return registry
