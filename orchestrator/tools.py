"""Tools the orchestrator model may call, declared once with their JSON schemas.

Each tool is the action ``tool:<name>`` for the permission model: the model is shown
only the tools the sender may use (``schemas_for``), and a call is checked again when it
is made (a model may name a tool it was not shown)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from core.errors import FetchError

if TYPE_CHECKING:
    from orchestrator.context import Context


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

    def schema(self) -> dict[str, Any]:
        return {"type": "function", "function": {
            "name": self.name, "description": self.description, "parameters": self.parameters}}


class ToolArgumentError(FetchError):
    pass


class ToolRegistry:
    def __init__(self) -> None:
        self._tools: dict[str, Tool] = {}

    def tool(
        self, name: str, description: str, properties: dict[str, Any], required: list[str]
    ) -> Callable[[ToolHandler], ToolHandler]:
        def register(fn: ToolHandler) -> ToolHandler:
            if name in self._tools:
                raise ValueError(f"tool {name!r} registered twice")
            params = {"type": "object", "properties": properties, "required": required,
                      "additionalProperties": False}
            self._tools[name] = Tool(name, description, params, fn)
            return fn
        return register

    def get(self, name: str) -> Tool | None:
        return self._tools.get(name)

    def schemas(self) -> list[dict[str, Any]]:
        return [t.schema() for t in self._tools.values()]

    def schemas_for(self, ctx: Context) -> list[dict[str, Any]]:
        """The schemas of the tools ``ctx``'s sender may use in this chat."""
        permissions = ctx.services.permissions
        return [t.schema() for t in self._tools.values()
                if permissions.may(ctx.subject, f"tool:{t.name}", ctx.session.key)]

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
    for name in tool.parameters["required"]:
        if name not in args:
            raise ToolArgumentError(f"missing required argument {name!r}")
    for name, value in args.items():
        if props[name].get("type") == "string" and not isinstance(value, str):
            raise ToolArgumentError(f"argument {name!r} must be a string")
    return args


def build_tools() -> ToolRegistry:
    from orchestrator import memory, scheduler

    registry = ToolRegistry()
    scheduler.register_tools(registry)
    memory.register_tools(registry)

    @registry.tool("workspace_list", "List the git repositories in the workspace.", {}, [])
    async def workspace_list(ctx: Context, args: dict[str, Any]) -> ToolResult:
        ws = ctx.services.workspace
        names = ws.repos()
        return ToolResult("\n".join(ws.describe(n) for n in names) or "(no repositories)")

    @registry.tool("workspace_use", "Make a repository the active one for this chat.",
                   {"repo": {"type": "string", "description": "repository name"}}, ["repo"])
    async def workspace_use(ctx: Context, args: dict[str, Any]) -> ToolResult:
        name = args["repo"]
        if name not in ctx.services.workspace.repos():
            return ToolResult(f"error: no repository named {name!r}")
        ctx.session.data.repo = name
        await ctx.session.persist()
        return ToolResult(f"active repo is now {name}")

    @registry.tool(
        "task_create",
        "Hand a coding task to the coding harness. It edits files; the owner then sees "
        "the diff and approves or rejects it.",
        {"repo": {"type": "string", "description": "repository name"},
         "instruction": {"type": "string", "description": "precise instruction"}},
        ["repo", "instruction"],
    )
    async def task_create(ctx: Context, args: dict[str, Any]) -> ToolResult:
        repo, instruction = args["repo"], args["instruction"].strip()
        if repo not in ctx.services.workspace.repos():
            return ToolResult(f"error: no repository named {repo!r}; call workspace_list")
        if not instruction:
            return ToolResult("error: the instruction is empty")
        if not await ctx.permit(f"repo:{repo}", f"tasks in {repo}"):
            return ToolResult(f"refused: the sender may not work in {repo}", final=True)
        await ctx.services.runner.start(ctx.session, repo, instruction, ctx.subject.id)
        return ToolResult("task handed to the harness", final=True)

    @registry.tool("ask_user", "Ask the owner a question and wait for the answer.",
                   {"question": {"type": "string"}}, ["question"])
    async def ask_user(ctx: Context, args: dict[str, Any]) -> ToolResult:
        question = args["question"].strip() or "Could you say a bit more?"
        ctx.session.data.question = question
        ctx.session.data.question_context = {"kind": "model", "original": ctx.text}
        await ctx.session.ask()
        await ctx.reply(f"❓ {question}")
        return ToolResult("asked", final=True)

    return registry
