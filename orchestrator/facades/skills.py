"""/skills's port: the catalog of this chat (owner, shipped, and the active repository's
committed skills when the sender may read that repository), rendered for a phone."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from instincts.contract import SessionPort
from orchestrator.skills.active import is_active
from skills import Catalog, Skill

if TYPE_CHECKING:
    from orchestrator.skills.book import SkillBook


class SkillsFacade:
    def __init__(self, book: SkillBook, repo: str | None = None) -> None:
        self._book = book
        self._repo = repo  # the chat's repository, if the sender may read it

    def of(self, repo: str | None) -> SkillsFacade:
        return SkillsFacade(self._book, repo)

    async def _catalog(self) -> Catalog:
        return await asyncio.to_thread(self._book.for_repo, self._repo)

    def _where(self, skill: Skill) -> str:
        return f"repo {self._repo}" if skill.source == "repo" else skill.source

    async def listing(self, session: SessionPort) -> str:
        catalog = await self._catalog()
        if not catalog.skills and not catalog.problems:
            return "🧰 No skills installed. Put one in FETCH_HOME/skills/<name>/SKILL.md."
        lines = ["🧰 Skills (✅ active in this chat):"]
        for s in catalog:
            mark = " ✅" if is_active(session.data, s.name) else ""
            cli = ", to the CLI" if s.cli else ""
            lines.append(f"• {s.name}{mark} ({self._where(s)}{cli})\n  {s.description}")
        lines.append("/skills <name> shows one.")
        if catalog.problems:
            lines.append(f"⚠️ {len(catalog.problems)} skill file(s) skipped: /status says why.")
        return "\n".join(lines)

    async def show(self, session: SessionPort, name: str) -> str:
        catalog = await self._catalog()
        skill = catalog.get(name.lower())
        if skill is None:
            known = ", ".join(catalog.names()) or "(none)"
            return f"❓ No skill named {name!r}. Skills: {known}"
        state = "active in this chat" if is_active(session.data, skill.name) else "not active"
        head = f"🧰 {skill.name} ({self._where(skill)}, {state})\n{skill.description}"
        return f"{head}\n\n{skill.body}" if skill.body else head


__all__ = ["SkillsFacade"]
