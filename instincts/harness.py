"""/harness: list the coding CLIs with their availability, or pick one for this chat."""

from __future__ import annotations

from core.errors import UnknownHarness
from instincts.contract import InstinctContext
from instincts.router import InstinctRouter

router = InstinctRouter("harness")


@router.command("harness", help="list coding CLIs; /harness <name> picks one", while_working=False)
async def harness(ctx: InstinctContext, args: str) -> None:
    harnesses, session = ctx.harnesses, ctx.session
    current = session.data.harness or harnesses.default()
    if args:
        name = args.split()[0].lower()
        try:
            chosen = harnesses.get(name)
        except UnknownHarness as err:
            await ctx.reply(f"🤔 {err}")
            return
        session.data.harness = chosen.name
        await session.persist()
        note = "" if chosen.usable else f"\n⚠️ not usable yet: {chosen.detail}"
        await ctx.reply(f"🔧 This chat now uses {chosen.name}.{note}")
        return
    lines = []
    for h in harnesses.all():
        mark = "▶" if h.name == current else ("✅" if h.usable else "⬚")
        lines.append(f"{mark} {h.name}: {h.detail}")
    await ctx.reply("🔧 Harnesses:\n" + "\n".join(lines) + "\n/harness <name> to pick.")
