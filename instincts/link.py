"""/link: one conversation across devices. ``/link`` shows a code; ``/link <code>`` in
the other chat pairs them (the web chat or the terminal with the owner's WhatsApp or
Telegram chat); ``/link off`` undoes it. Owner only."""

from __future__ import annotations

from instincts.contract import InstinctContext
from instincts.router import InstinctRouter

router = InstinctRouter("link")


@router.command(
    "link",
    help="one conversation across devices: /link shows a code, /link <code> pairs, /link off",
    while_working=False,
)
async def link(ctx: InstinctContext, args: str) -> None:
    words = args.split()
    if not words:
        await ctx.reply(await ctx.linking.offer())
    elif len(words) == 1 and words[0].lower() in ("off", "undo", "unlink"):
        await ctx.reply(await ctx.linking.unlink())
    elif len(words) == 1:
        await ctx.reply(await ctx.linking.redeem(words[0]))
    else:
        await ctx.reply("🤔 /link shows a code, /link <code> pairs with it, /link off undoes it.")
