"""/workspace: list the repos, or pick the active one."""

from __future__ import annotations

from instincts.router import InstinctRouter
from orchestrator.context import Context

router = InstinctRouter("workspace")


@router.command("workspace", aliases=("repos", "project"),
                help="list repos; /workspace <name> picks one", while_working=False)
async def workspace(ctx: Context, args: str) -> None:
    ws = ctx.services.workspace
    names = ws.repos()
    if args:
        name = args.split()[0]
        if name not in names:
            await ctx.reply(f"No repo named {name[:40]!r}. Repos: {', '.join(names) or 'none'}")
            return
        ctx.session.data.repo = name
        await ctx.session.persist()
        await ctx.reply(f"📂 Now working in {ws.describe(name)}.")
        return
    active = ctx.session.data.repo
    lines = [f"{'▶' if n == active else '•'} {ws.describe(n)}" for n in names]
    await ctx.reply(f"📂 {ws.root}\n" + ("\n".join(lines) or "(no git repos yet)"))
