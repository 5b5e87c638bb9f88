"""/undo's port: revert the last commit Fetch made in a chat (instincts ``Commits``).

Bound to the sender (``of``): a commit made for someone else is never reverted by a
sender who may not undo others' (``undo:others``; the owner may)."""

from __future__ import annotations

import asyncio

from core.errors import GitError
from core.events import SessionKey
from orchestrator.store import Store
from orchestrator.task import recovery
from orchestrator.task.crashpoint import crash_point
from orchestrator.workspace import Workspace


class CommitsFacade:
    def __init__(
        self, store: Store, workspace: Workspace, subject: str = "owner", undo_others: bool = True
    ) -> None:
        self._store = store
        self._workspace = workspace
        self._subject = subject
        self._undo_others = undo_others

    def of(self, subject: str, undo_others: bool) -> CommitsFacade:
        return CommitsFacade(self._store, self._workspace, subject, undo_others)

    async def undo_last(self, key: SessionKey) -> str:
        last = await self._store.work.last_commit(key)
        if last is None:
            return "Nothing to undo: I haven't committed anything here."
        if last.requester != self._subject and not self._undo_others:
            return (
                f"🔒 The last commit here ({last.sha[:7]}: {last.summary}) was made for "
                "someone else; only they or the owner can undo it."
            )
        message = (
            f"fetch: undo {last.sha[:7]}\n\nReverts {last.sha}: {last.summary}\n\n"
            f"Fetch-Undo: {last.sha}"
        )
        try:
            repo = self._workspace.repo(last.repo)
            head = await asyncio.to_thread(repo.head)
        except GitError as err:
            return f"❌ Couldn't undo {last.sha[:7]}: {err}"
        # Journalled: a kill between the revert's ref move and this record is settled
        # from git at the next start (orchestrator/task/recovery.py).
        intent = await self._store.work.open_intent(
            "undo", key, last.repo, last.id, head, "", message
        )
        crash_point("undo:intent")
        try:
            new = await asyncio.to_thread(repo.revert, last.sha, message)
        except GitError as err:
            moved = await asyncio.to_thread(recovery.settled_after_error, repo, intent)
            if moved is None:
                await self._store.work.void_intent(intent.id)
                return f"❌ Couldn't undo {last.sha[:7]}: {err}"
            new = moved  # the ref moved before git failed: reverted all the same
        crash_point("undo:ref")
        await self._store.work.undo_done(intent.id, new)
        return (
            f"↩️ Reverted {last.sha[:7]} in {last.repo}: {last.summary}\n"
            f"New commit {new[:7]}; the files are as they were before it."
        )
