"""What a model turn carries of skills besides the frozen prompt's ``<available_skills>``:
the thread's activated skills (after the system prompt) and the active repository's
committed skills, listed in this turn's session note. Repository skills are not in the
frozen prompt: the active repository can change mid-thread, and the prefix must not."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from identity.prompt import available_skills
from orchestrator.skills.tool import skills_repo

if TYPE_CHECKING:
    from orchestrator.context import Context


async def repo_skills_note(ctx: Context) -> str:
    """``<available_skills source="repo:NAME">`` for the active repository, or ''."""
    name = skills_repo(ctx)
    if name is None:
        return ""
    catalog = await asyncio.to_thread(ctx.services.skills.for_repo, name)
    own = [(s.name, s.description) for s in catalog if s.source == "repo"]
    return available_skills(own, f"repo:{name}") if own else ""


__all__ = ["repo_skills_note"]
