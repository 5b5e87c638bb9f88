"""/undo's port: revert the last commit Fetch made in a chat (instincts ``Commits``)."""

from __future__ import annotations

import asyncio

from core.errors import GitError
from core.events import SessionKey
from orchestrator.store import Store
from orchestrator.workspace import Workspace


class CommitsFacade:
    def __init__(self, store: Store, workspace: Workspace) -> None:
        self._store = store
        self._workspace = workspace

    async def undo_last(self, key: SessionKey) -> str:
        last = await self._store.work.last_commit(key)
        if last is None:
            return "Nothing to undo: I haven't committed anything here."
        try:
            repo = self._workspace.repo(last.repo)
            new = await asyncio.to_thread(
                repo.revert, last.sha,
                f"fetch: undo {last.sha[:7]}\n\nReverts {last.sha}: {last.summary}\n\n"
                f"Fetch-Undo: {last.sha}")
        except GitError as err:
            return f"❌ Couldn't undo {last.sha[:7]}: {err}"
        await self._store.work.mark_undone(last.id, new)
        return (f"↩️ Reverted {last.sha[:7]} in {last.repo}: {last.summary}\n"
                f"New commit {new[:7]}; the files are as they were before it.")
