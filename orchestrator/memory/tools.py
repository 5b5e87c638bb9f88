"""Memory's tools for the orchestrator model (the harnesses get the same three over MCP)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from orchestrator.memory.models import KINDS
from orchestrator.tools import ToolRegistry, ToolResult

if TYPE_CHECKING:
    from orchestrator.context import Context


def _int(value: Any, default: int, low: int, high: int) -> int:
    try:
        number = int(value)
    except (TypeError, ValueError):
        return default
    return max(low, min(high, number))


def register_tools(registry: ToolRegistry) -> None:
    @registry.tool(
        "memory_write",
        # Short on purpose: every tool's words go out with every request.
        "Remember across conversations a fact, a preference of the owner or a learning "
        "(a fix that worked); a near-duplicate updates the old one.",
        {
            "content": {"type": "string", "description": "1-3 self-contained sentences"},
            "type": {"type": "string", "enum": list(KINDS)},
            "tags": {"type": "array", "items": {"type": "string"}},
        },
        ["content"],
    )
    async def memory_write(ctx: Context, args: dict[str, Any]) -> ToolResult:
        tags = args.get("tags") or []
        if not isinstance(tags, list):
            return ToolResult("error: tags must be a list of strings")
        kind = str(args.get("type") or "fact")
        result = await ctx.services.memory.write(
            args["content"],
            kind,
            tuple(str(t) for t in tags),
            source="orchestrator",
            subject=ctx.subject.id,
        )
        verb = "updated near-duplicate" if result.merged else "saved"
        return ToolResult(f"{verb} memory #{result.item.id}")

    @registry.tool(
        "memory_search",
        "Search long-term memory: facts, preferences, learnings, past conversations.",
        {"query": {"type": "string"}, "limit": {"type": "integer", "minimum": 1, "maximum": 20}},
        ["query"],
        kind="read",
    )
    async def memory_search(ctx: Context, args: dict[str, Any]) -> ToolResult:
        memory = ctx.services.memory
        hits = await memory.search(
            args["query"], _int(args.get("limit"), 5, 1, 20), subject=ctx.subject.id
        )
        return ToolResult(
            json.dumps(
                {"mode": memory.mode(), "hits": [h.as_dict() for h in hits]}, ensure_ascii=False
            )
        )

    @registry.tool(
        "memory_read",
        "A past conversation's transcript (chunk id from memory_search).",
        {"chunk_id": {"type": "integer"}},
        ["chunk_id"],
        kind="read",
    )
    async def memory_read(ctx: Context, args: dict[str, Any]) -> ToolResult:
        chunk_id = _int(args.get("chunk_id"), -1, -1, 2**62)
        text = await ctx.services.memory.read(chunk_id)
        return ToolResult(text or f"error: no archived conversation #{args.get('chunk_id')}")
