"""/grants: the owner's list of grants, and the owner's answers to asks.

/grants                          list grants and open questions
/grants revoke <id>              take one back
/grants yes <nonce> [once|session|always]    answer an ask (default once)
/grants no <nonce>
/grants allow <who> <action> [session|always]  grant without being asked
"""

from __future__ import annotations

from instincts.contract import InstinctContext
from instincts.router import InstinctRouter

router = InstinctRouter("grants")
USAGE = (
    "/grants · /grants revoke <id> · /grants yes <code> [once|session|always] · "
    "/grants no <code> · /grants allow <who> <action> [session|always]"
)


@router.command(
    "grants",
    aliases=("grant",),
    help="who may do what beyond their profile (owner): list, revoke, answer",
)
async def grants(ctx: InstinctContext, args: str) -> None:
    port = ctx.grants
    if not port.for_owner:  # the permission model refuses it first; this is the backstop
        await ctx.reply("🔒 Only the owner manages grants.")
        return
    words = args.split()
    verb = words[0].lower() if words else ""
    if not verb or verb == "list":
        await ctx.reply(port.listing())
    elif verb == "revoke" and len(words) == 2 and words[1].lstrip("#").isdigit():
        await ctx.reply(await port.revoke(int(words[1].lstrip("#"))))
    elif verb in ("yes", "no") and len(words) in (2, 3):
        scope = words[2].lower() if len(words) == 3 else "once"
        if scope not in ("once", "session", "always"):
            await ctx.reply(USAGE)
            return
        await ctx.reply(await port.answer(words[1], verb == "yes", scope))
    elif verb == "allow" and len(words) in (3, 4):
        scope = words[3].lower() if len(words) == 4 else "always"
        if scope not in ("session", "always"):
            await ctx.reply(USAGE)
            return
        await ctx.reply(await port.grant(words[1], words[2], scope))
    else:
        await ctx.reply(USAGE)
