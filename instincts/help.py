"""/help and /commands."""

from __future__ import annotations

from instincts.contract import InstinctContext
from instincts.router import InstinctRouter

router = InstinctRouter("help")


@router.command("help", aliases=("h", "?", "start"), help="what I can do", reads_only=True)
async def help_(ctx: InstinctContext, args: str) -> None:
    mine = [c.name for c in ctx.commands.all()]
    if "undo" not in mine:  # what the sender may not use is not offered here either
        await ctx.reply(
            "🐕 I'm Fetch. What you can use here:\n" + " ".join(f"/{name}" for name in mine)
        )
        return
    await ctx.reply(
        "🐕 I'm Fetch. Tell me a code change in plain words:\n"
        "  fix the typo in README.md of demo\n"
        "I run a coding CLI in a sandbox, show you the diff,\n"
        "and commit only after you say yes. /undo reverts.\n\n"
        "/commands lists every command."
    )


@router.command("commands", aliases=("cmds",), help="list every command", reads_only=True)
async def commands(ctx: InstinctContext, args: str) -> None:
    lines = []
    for instinct in ctx.commands.all():
        alias = f" (/{', /'.join(instinct.aliases)})" if instinct.aliases else ""
        lines.append(f"/{instinct.name}{alias}\n   {instinct.help}")
    await ctx.reply("Commands:\n" + "\n".join(lines))
