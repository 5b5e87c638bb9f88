"""/cost: what the models cost today, this week and for the running task, and how much
of each budget is spent. Needs no model, so it answers when a budget has stopped them."""

from __future__ import annotations

from instincts.contract import InstinctContext
from instincts.router import InstinctRouter

router = InstinctRouter("cost")


@router.command(
    "cost",
    aliases=("costs", "spend"),
    help="spend today, this week, per task; budgets",
    bypass_queue=True,
    reads_only=True,
)
async def cost(ctx: InstinctContext, args: str) -> None:
    await ctx.reply(await ctx.cost.report(ctx.session.key))
