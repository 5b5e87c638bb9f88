"""``activate_skill``: phase 2 of skills. The prompt lists names and descriptions only
(``<available_skills>``); the model calls this to load one skill's instructions, which
then stay in the thread (orchestrator/skills/active.py). A read: it changes no file and
no repository, only what this chat's later requests carry."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from orchestrator.skills.active import activate, is_active, wrap
from orchestrator.tools import ToolRegistry, ToolResult

if TYPE_CHECKING:
    from orchestrator.context import Context


def skills_repo(ctx: Context) -> str | None:
    """The chat's active repository, if the sender may read it (its skills are its text)."""
    name = ctx.session.data.repo
    if not name or name not in ctx.services.workspace.repos():
        return None
    allowed = ctx.services.permissions.decide(ctx.subject, f"repo:{name}", ctx.session.key)
    return name if allowed.allowed else None


def register_tools(registry: ToolRegistry) -> None:
    @registry.tool(
        "activate_skill",
        "Load a skill for this chat.",
        {"name": {"type": "string"}},
        ["name"],
        kind="read",
    )
    async def activate_skill(ctx: Context, args: dict[str, Any]) -> ToolResult:
        name = args["name"].strip()
        data = ctx.session.data
        if is_active(data, name):
            return ToolResult(f"skill {name} is already active: its instructions are above")
        catalog = await asyncio.to_thread(ctx.services.skills.for_repo, skills_repo(ctx))
        skill = catalog.get(name)
        if skill is None:
            known = ", ".join(catalog.names()) or "(none installed)"
            return ToolResult(f"error: no skill named {name!r}; the skills are: {known}")
        if not activate(data, skill):  # a parallel call of this turn was first
            return ToolResult(f"skill {name} is already active: its instructions are above")
        await ctx.session.persist()
        return ToolResult(wrap(skill.name, skill.source, skill.body))


__all__ = ["register_tools", "skills_repo"]
