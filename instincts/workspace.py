"""/workspace: list the repos, or pick the active one."""

from __future__ import annotations

from instincts.router import InstinctRouter
from orchestrator.context import Context
from orchestrator.conversation import list_repos, use_repo

router = InstinctRouter("workspace")


@router.command("workspace", aliases=("repos", "project"),
                help="list repos; /workspace <name> picks one", while_working=False)
async def workspace(ctx: Context, args: str) -> None:
    if args:
        await use_repo(ctx, args.split()[0])
    else:
        await list_repos(ctx)
