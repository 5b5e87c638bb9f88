"""/help and /commands."""

from __future__ import annotations

from instincts.router import InstinctRouter
from orchestrator.context import Context

router = InstinctRouter("help")


@router.command("help", aliases=("h", "?", "start"), help="what I can do", bypass_queue=False)
async def help_(ctx: Context, args: str) -> None:
    await ctx.reply(
        "🐕 I'm Fetch. Tell me a code change in plain words:\n"
        "  fix the typo in README.md of demo\n"
        "I run a coding CLI in a sandbox, show you the diff,\n"
        "and commit only after you say yes. /undo reverts.\n\n"
        "/commands lists every command.")


@router.command("commands", aliases=("cmds",), help="list every command")
async def commands(ctx: Context, args: str) -> None:
    lines = []
    for instinct in ctx.services.instincts.all():
        alias = f" (/{', /'.join(instinct.aliases)})" if instinct.aliases else ""
        lines.append(f"/{instinct.name}{alias}\n   {instinct.help}")
    await ctx.reply("Commands:\n" + "\n".join(lines))
