"""/workspace's port (and "use demo" in free text): the repos, and a chat's choice of one
(instincts ``Workspace``)."""

from __future__ import annotations

from instincts.contract import SessionPort
from orchestrator.workspace import Workspace


class WorkspaceFacade:
    def __init__(self, workspace: Workspace) -> None:
        self._workspace = workspace

    def listing(self, active: str | None) -> str:
        ws = self._workspace
        lines = [f"{'▶' if n == active else '•'} {ws.describe(n)}" for n in ws.repos()]
        return (
            f"📂 {ws.root}\n"
            + ("\n".join(lines) or "(no git repos yet)")
            + "\n'use <name>' to pick one."
        )

    async def use(self, session: SessionPort, name: str) -> str:
        """Make ``name`` this chat's active repo."""
        names = self._workspace.repos()
        if name not in names:
            return f"No repo named {name[:40]!r}. Repos: {', '.join(names) or 'none'}"
        session.data.repo = name
        await session.persist()
        return f"📂 Now working in {self._workspace.describe(name)}."
