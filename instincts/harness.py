"""/harness: list the coding CLIs with their availability, or pick one for this chat."""

from __future__ import annotations

from core.errors import UnknownHarness
from instincts.router import InstinctRouter
from orchestrator.context import Context

router = InstinctRouter("harness")


@router.command("harness", help="list coding CLIs; /harness <name> picks one",
                while_working=False)
async def harness(ctx: Context, args: str) -> None:
    s = ctx.services
    current = ctx.session.data.harness or s.runner.default_harness()
    if args:
        name = args.split()[0].lower()
        try:
            chosen = s.harnesses.get(name)
        except UnknownHarness as err:
            await ctx.reply(f"🤔 {err}")
            return
        avail = s.runner.availability(chosen)
        ctx.session.data.harness = chosen.name
        await ctx.session.persist()
        note = "" if avail.usable else f"\n⚠️ not usable yet: {avail.detail}"
        await ctx.reply(f"🔧 This chat now uses {chosen.name}.{note}")
        return
    lines = []
    for h in s.harnesses.all():
        avail = s.runner.availability(h)
        mark = "▶" if h.name == current else ("✅" if avail.usable else "⬚")
        lines.append(f"{mark} {h.name}: {avail.detail}")
    await ctx.reply("🔧 Harnesses:\n" + "\n".join(lines) + "\n/harness <name> to pick.")
