"""/undo: revert the last commit Fetch made in this conversation."""

from __future__ import annotations

import asyncio

from core.errors import GitError
from core.state import State
from instincts.router import InstinctRouter
from orchestrator.context import Context

router = InstinctRouter("undo")


@router.command("undo", aliases=("revert",), help="revert the last commit I made",
                while_working=False)
async def undo(ctx: Context, args: str) -> None:
    s = ctx.services
    if ctx.session.fsm_state is State.GUARDING:
        await ctx.reply("A diff waits for you: answer yes or no first.")
        return
    last = await s.store.work.last_commit(ctx.session.key)
    if last is None:
        await ctx.reply("Nothing to undo: I haven't committed anything here.")
        return
    try:
        repo = s.workspace.repo(last.repo)
        new = await asyncio.to_thread(
            repo.revert, last.sha,
            f"fetch: undo {last.sha[:7]}\n\nReverts {last.sha}: {last.summary}\n\n"
            f"Fetch-Undo: {last.sha}")
    except GitError as err:
        await ctx.reply(f"❌ Couldn't undo {last.sha[:7]}: {err}")
        return
    await s.store.work.mark_undone(last.id, new)
    await ctx.reply(f"↩️ Reverted {last.sha[:7]} in {last.repo}: {last.summary}\n"
                    f"New commit {new[:7]}; the files are as they were before it.")
