"""The tool executor: one model turn's tool calls, checked, then run.

Every call is checked first, in order (the permission model again: a model may name a
tool it was not shown; then JSON and the schema). Then the ``read`` calls run in
parallel (``asyncio.gather``) and the ``write`` calls in the order the model gave, after
the reads; a write that ends the turn (work handed off, a question asked) skips the
writes after it. A cached read is answered from the cache when the same tool, arguments
and repository state were seen; any write empties the cache. A write the auto-approve
table marks ``ask`` waits for the owner's yes (confirm.py). Results go back in call order.
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from core.errors import FetchError
from orchestrator.agent import confirm
from orchestrator.agent.access import repo_of
from orchestrator.agent.cache import ResultCache, cache_key
from orchestrator.agent.repostate import repo_state
from orchestrator.tools import Tool, ToolArgumentError, ToolRegistry, check_args

if TYPE_CHECKING:
    from orchestrator.context import Context

SKIPPED = "skipped: an earlier call in this turn ended it"


@dataclass(slots=True)
class Checked:
    call_id: str
    tool: Tool | None = None
    args: dict[str, Any] | None = None
    content: str = ""  # the answer already, when the check refused
    final: bool = False


class ToolExecutor:
    def __init__(self, tools: ToolRegistry) -> None:
        self.tools = tools
        self.cache = ResultCache()

    async def run(self, ctx: Context, calls: list[Any]) -> tuple[list[tuple[str, str]], bool]:
        """(call id, result) in call order, and whether the turn ended."""
        checked = [await self._check(ctx, call) for call in calls]
        reads = [c for c in checked if c.tool is not None and c.tool.kind == "read"]
        for c, (content, final) in zip(
            reads,
            await asyncio.gather(*(self._read(ctx, c.tool, c.args or {}) for c in reads if c.tool)),
            strict=True,
        ):
            c.content, c.final = content, final
        ended = any(c.final for c in checked)
        for c in checked:
            if c.tool is None or c.tool.kind != "write":
                continue
            if ended:
                c.content = SKIPPED
                continue
            if c.tool.ask and not await confirm.cleared(ctx, c.tool, c.args or {}):
                c.content, c.final = await confirm.request(ctx, c.tool, c.args or {})
            else:
                c.content, c.final = await self._write(ctx, c.tool, c.args or {})
            ended = ended or c.final
        return [(c.call_id, c.content) for c in checked], ended

    async def run_confirmed(self, ctx: Context, name: str, args: dict[str, Any]) -> str:
        """A tool the owner said yes to: checked again (a grant may be gone), then run."""
        tool = self.tools.get(name)
        if (
            tool is None
            or not ctx.services.permissions.decide(
                ctx.subject, f"tool:{name}", ctx.session.key
            ).allowed
        ):
            return f"error: {name} is not allowed any more"
        content, _final = await self._write(ctx, tool, args)
        return content

    # -- checking -----------------------------------------------------------------------
    async def _check(self, ctx: Context, call: Any) -> Checked:
        function = getattr(call, "function", None)
        checked = Checked(str(getattr(call, "id", "")))
        if function is None:
            checked.content = "error: only function tools are available"
            return checked
        tool = self.tools.get(function.name)
        permissions = ctx.services.permissions
        if tool is None or not permissions.may(ctx.subject, f"tool:{tool.name}", ctx.session.key):
            shown = [t.name for t in self.tools.visible(permissions, ctx.subject, ctx.session.key)]
            checked.content = (
                f"error: unknown tool {function.name!r}; available: {', '.join(shown)}"
            )
            return checked
        if not permissions.decide(ctx.subject, f"tool:{tool.name}", ctx.session.key).allowed:
            # An "ask" rule: the owner is asked; this turn ends here.
            await ctx.permit(f"tool:{tool.name}", tool.name)
            checked.content, checked.final = (
                ("the owner was asked; this tool waits for their answer"),
                True,
            )
            return checked
        try:
            checked.args = check_args(tool, json.loads(function.arguments or "{}"))
        except ValueError as err:
            checked.content = f"error: arguments were not valid JSON ({err}); send a JSON object"
            return checked
        except ToolArgumentError as err:
            checked.content = f"error: {err}"
            return checked
        checked.tool = tool
        return checked

    # -- running ------------------------------------------------------------------------
    async def _read(self, ctx: Context, tool: Tool, args: dict[str, Any]) -> tuple[str, bool]:
        key = await self._key(ctx, tool, args) if tool.cached else None
        if key is not None:
            hit = self.cache.get(key)
            if hit is not None:
                return hit, False
        content, final = await _invoke(ctx, tool, args)
        # Keyed by the state before the read: a write meanwhile empties the cache anyway.
        if key is not None and not content.startswith("error:"):
            self.cache.put(key, content)
        return content, final

    async def _write(self, ctx: Context, tool: Tool, args: dict[str, Any]) -> tuple[str, bool]:
        try:
            return await _invoke(ctx, tool, args)
        finally:
            self.cache.clear()  # whatever it changed, no cached read is trusted after it

    async def _key(self, ctx: Context, tool: Tool, args: dict[str, Any]) -> str | None:
        try:
            # The sender's access is checked before the cache is looked at: a hit must
            # never show a member what only the owner (or another member) may read.
            name = repo_of(ctx, args)
            state = await asyncio.to_thread(repo_state, ctx.services.workspace.repo(name))
        except (FetchError, OSError):
            return None  # no caching; the tool itself says what is wrong
        return cache_key(tool.name, {**args, "repo": name}, state)


async def _invoke(ctx: Context, tool: Tool, args: dict[str, Any]) -> tuple[str, bool]:
    started = time.perf_counter()
    try:
        result = await tool.handler(ctx, args)
    except FetchError as err:  # ToolArgumentError, GitError, UnsafeName, ... go back
        content, final = f"error: {err}", False
    else:
        content, final = result.content, result.final
    # The chat's tool timeline (the dashboard's replay): name, duration, whether it failed.
    ms = round((time.perf_counter() - started) * 1000, 1)
    ok = not content.startswith("error:")
    ctx.services.messenger.record(ctx.session.key, "tool", tool.name, ms=ms, ok=ok)
    return content, final
