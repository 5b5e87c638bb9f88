"""The auto-approve table's "ask": a write tool runs only after a yes.

The owner is asked in the chat (the session WAITS; "yes" runs the tool, anything else
drops it). Anyone else goes through the permission model's ask flow: the owner gets a
/grants question, and a grant they give (once, session, always) lets the tool run when
the sender tries again.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from orchestrator.permissions.model import OWNER
from orchestrator.tools import Tool

if TYPE_CHECKING:
    from orchestrator.context import Context

KIND = "tool"  # question_context["kind"] of a pending yes/no
YES = frozenset(
    {"yes", "y", "ok", "okay", "sure", "go", "go ahead", "do it", "yes please", "👍", "✅"}
)
NO = frozenset({"no", "n", "nope", "don't", "dont", "cancel", "stop", "no thanks", "👎", "❌"})


async def cleared(ctx: Context, tool: Tool, args: dict[str, Any]) -> bool:
    """True when a non-owner holds a grant for this tool (a ``once`` grant is used up)."""
    if ctx.subject.is_owner:
        return False
    permissions = ctx.services.permissions
    action = f"tool:{tool.name}"
    grant = permissions.grants.find(
        ctx.subject.id, action, ctx.session.key, ("once", "session", "persisted")
    )
    if grant is None:
        return False
    if grant.scope == "once":
        await permissions.grants.revoke(grant.id)
    return True


def describe(tool: Tool, args: dict[str, Any]) -> str:
    shown = ", ".join(f"{k}={v!r}" for k, v in sorted(args.items()))
    return f"{tool.name}({shown})"


async def request(ctx: Context, tool: Tool, args: dict[str, Any]) -> tuple[str, bool]:
    """Ask for the yes; the turn ends here (the result the model sees, final)."""
    what = describe(tool, args)
    if not ctx.subject.is_owner:
        await ctx.services.permissions.ask_owner(
            ctx.subject, f"tool:{tool.name}", ctx.session.key, ctx.reply, what
        )
        return f"the owner was asked to allow {what}; nothing was done yet", True
    data = ctx.session.data
    data.question = f"May I run {what}?"
    # Only the owner's answer counts (conversation.py checks ``subject``).
    data.question_context = {"kind": KIND, "tool": tool.name, "args": args, "subject": OWNER}
    await ctx.session.ask()
    await ctx.reply(f"❓ May I run {what}?\n{tool.description}\nyes / no")
    return "the owner was asked to confirm; nothing was done yet", True


async def answer(ctx: Context, context: dict[str, Any]) -> bool:
    """The owner's answer to ``request`` (the session has left WAITING already). False
    when the message was not a yes or a no but something new: the tool is not run, and
    the caller handles the message as a fresh one."""
    name, args = str(context.get("tool", "")), dict(context.get("args") or {})
    said = ctx.text.strip().lower().rstrip(".!")
    if said not in YES:
        await ctx.reply(f"👍 Not done: {name} was not run.")
        return said in NO
    result = await ctx.services.planner.executor.run_confirmed(ctx, name, args)
    await ctx.reply(
        f"✅ {name}: {result}" if not result.startswith("error:") else f"⚠️ {name}: {result}"
    )
    return True
