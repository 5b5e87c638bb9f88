"""``block_update``: the orchestrator model edits a memory block.

A write (in order, never cached) that does not ask: the permission model already keeps
it to the owner by default (``tool:block_update`` is in no other profile), and every
change is a version the owner can revert with /blocks. The author recorded is
``fetch for <subject id>``: the model, on behalf of the sender of this turn.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from orchestrator.blocks.service import KINDS, BlockError
from orchestrator.tools import ToolRegistry, ToolResult

if TYPE_CHECKING:
    from orchestrator.context import Context

MODES = {"replace": "set", "append": "append"}


def register_tools(registry: ToolRegistry) -> None:
    @registry.tool(
        "block_update",
        "Edit a memory block of your prompt (project: default the active repo).",
        {
            "kind": {"type": "string", "enum": list(KINDS)},
            "repo": {"type": "string"},
            "mode": {"type": "string", "enum": list(MODES)},
            "text": {"type": "string"},
        },
        ["kind", "mode", "text"],
    )
    async def block_update(ctx: Context, args: dict[str, Any]) -> ToolResult:
        kind, mode, text = args["kind"], args["mode"], args["text"]
        if mode not in MODES:
            return ToolResult(f"error: mode must be replace or append, not {mode[:20]!r}")
        repo = None
        if kind == "project":
            repo = args.get("repo") or ctx.session.data.repo
            if repo and repo not in ctx.services.workspace.repos():
                return ToolResult(f"error: no repository named {repo[:40]!r}; call workspace_list")
        edit = "clear" if mode == "replace" and not text.strip() else MODES[mode]
        blocks = ctx.services.blocks
        try:
            done = await blocks.edit(kind, repo, edit, text, f"fetch for {ctx.subject.id}")
        except BlockError as err:
            return ToolResult(f"error: {err}")
        name = f"{done.kind} {done.scope}" if done.scope else done.kind
        return ToolResult(
            f"{name} block is now version {done.number} ({len(done.text):,}/"
            f"{blocks.limit(done.kind):,} chars); your prompt carries it from the next turn"
        )
