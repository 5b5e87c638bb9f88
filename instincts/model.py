"""/model: the orchestrator's models (its provider chain) and each coding CLI's, and this
chat's choice of them. The choice lives in the session's data, so it survives a restart;
/status shows it."""

from __future__ import annotations

import re

from instincts.contract import InstinctContext, ModelOption
from instincts.router import InstinctRouter

router = InstinctRouter("model")
ORCHESTRATOR = "orchestrator"
RESET = {"default", "reset", "auto"}
# What a CLI's --model takes: a name, never an option or a path of the host's.
MODEL_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:@\[\]/-]{0,79}$")
USAGE = (
    "/model <name> picks the orchestrator's model · /model <cli> <name> a coding CLI's · "
    "/model default (or /model <cli> default) goes back to the configured one."
)


@router.command("model", help="list models; /model <name> or /model <cli> <name> picks one")
async def model(ctx: InstinctContext, args: str) -> None:
    words = args.split()
    options = ctx.models.options()
    if not words:
        await ctx.reply(_listing(ctx, options))
        return
    if len(words) > 2:
        await ctx.reply(f"🤔 Too many words. {USAGE}")
        return
    families = ctx.models.families()
    first = words[0].lower()
    if first in families or first == ORCHESTRATOR:
        if len(words) == 1:
            await ctx.reply(f"🤔 Which model for {first}? {USAGE}")
            return
        await _set(ctx, first, words[1], options)
        return
    if len(words) == 2:
        await ctx.reply(f"🤔 No coding CLI called {words[0][:40]!r}: {', '.join(families)}.")
        return
    await _set(ctx, ORCHESTRATOR, words[0], options)


async def _set(ctx: InstinctContext, family: str, name: str, options: list[ModelOption]) -> None:
    data = ctx.session.data
    mine = [o for o in options if o.family == family]
    if family == ORCHESTRATOR:
        if name.lower() in RESET:
            data.model = None
            await ctx.session.persist()
            await ctx.reply("🧠 The orchestrator uses its chain in the configured order again.")
            return
        if not mine:
            await ctx.reply("🧠 No orchestrator model is configured (model.providers).")
            return
        low = name.lower()
        chosen = next((o for o in mine if low in (o.where.lower(), o.name.lower())), None)
        if chosen is None:
            listed = ", ".join(f"{o.name} ({o.where})" for o in mine)
            await ctx.reply(
                f"🤔 {name[:60]!r} is not in the orchestrator's chain: {listed}.\n"
                "A coding CLI's model: /model <cli> <name>."
            )
            return
        data.model = chosen.where
        await ctx.session.persist()
        await ctx.reply(
            f"🧠 This chat's orchestrator now uses {chosen.name} on {chosen.where} "
            "(the rest of the chain stays its fallback)."
        )
        return
    if name.lower() in RESET:
        data.cli_models.pop(family, None)
        await ctx.session.persist()
        await ctx.reply(f"🔧 {family} uses its configured model again.")
        return
    if not MODEL_NAME.match(name):
        await ctx.reply("🤔 A model's name is letters, digits and . _ - : / @ (e.g. sonnet).")
        return
    data.cli_models[family] = name
    await ctx.session.persist()
    known = any(o.name == name for o in mine)
    note = "" if known else f"\nℹ️ not one I know for {family}; it will say if it doesn't."
    await ctx.reply(f"🔧 This chat's {family} tasks now use {name}.{note}")


def _listing(ctx: InstinctContext, options: list[ModelOption]) -> str:
    data = ctx.session.data
    lines = ["🧠 Models for this chat", "orchestrator (tried in order; your pick first):"]
    chain = [o for o in options if o.family == ORCHESTRATOR]
    if not chain:
        lines.append("  none configured (model.providers)")
    current = data.model if any(o.where == data.model for o in chain) else None
    for i, o in enumerate(chain):
        mark = "▶" if o.where == current or (current is None and i == 0) else "•"
        lines.append(f"{mark} {o.name} on {o.where}")
    for family in ctx.models.families():
        names = [o.name for o in options if o.family == family]
        chosen = data.cli_models.get(family)
        if chosen and chosen not in names:
            names.insert(0, chosen)
        active = chosen or (names[0] if names else "")
        shown = " · ".join(f"▶ {n}" if n == active else n for n in names)
        lines.append(f"{family}: {shown or 'its own default'}")
    lines.append(USAGE)
    return "\n".join(lines)
