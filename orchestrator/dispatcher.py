"""The pipeline for one message: instincts first (no model), then the FSM group.

The command word and its arguments are already on the event (the gateway parsed them,
``orchestrator/commandline.py``); nothing here parses again.

Before any instinct runs, and before free text reaches the model or the task pipeline
(``talk``), the permission model is asked for the sender (``ctx.subject``, never the
chat). Answers to a waiting diff are judged by approvals (``approve``)."""

from __future__ import annotations

import logging

from core.errors import FetchError, StopPropagation
from core.state import State
from orchestrator.context import Context
from orchestrator.conversation import handle_text
from orchestrator.store import once
from orchestrator.store.errors import storage_error

log = logging.getLogger(__name__)


async def dispatch(ctx: Context) -> None:
    """Run one message through the groups; every failure becomes a clear reply."""
    try:
        await _instincts(ctx)
        if ctx.session.state is not State.GUARDING and not await ctx.permit(
            "talk", "free text (only commands)"
        ):
            raise StopPropagation
        await handle_text(ctx)
    except StopPropagation:
        return
    except FetchError as err:
        await ctx.reply(f"⚠️ {err}")
    except Exception as err:  # the last line of defence: log, answer, keep serving
        log.exception("handler failed for %s", ctx.session.key)
        unsaved = storage_error(err)  # a full disk, a read-only or damaged database
        if unsaved is not None:
            await ctx.reply(f"⚠️ {unsaved}")
            return
        await ctx.reply(
            "⚠️ Something went wrong on my side (it's in the log). "
            "Your code is untouched; try again."
        )


async def _instincts(ctx: Context) -> None:
    word = ctx.inbound.command  # parsed once, by the gateway
    if word is None:
        if ctx.text.startswith("/"):
            await ctx.reply("🤔 That looks like a command but isn't one. /help lists them.")
            raise StopPropagation
        return
    registry = ctx.services.instincts
    instinct = registry.get(word)
    if instinct is None:
        close = registry.suggest(word)
        hint = f" Did you mean {', '.join('/' + c for c in close)}?" if close else ""
        await ctx.reply(f"🤔 I don't know /{word}.{hint} /help lists what I can do.")
        raise StopPropagation
    if not await ctx.permit(f"instinct:{instinct.name}", f"/{instinct.name}"):
        raise StopPropagation
    if not instinct.while_working and ctx.session.state is State.WORKING:
        # Kept, not dropped: the gateway runs it, in order, once the chat is idle again.
        ctx.deferred = True
        await ctx.reply(
            f"⏳ /{instinct.name} waits until the task finishes; I'll run it then "
            "(/stop ends the task)."
        )
        raise StopPropagation
    # Its effect closes its inbound row in the same transaction: exactly once.
    with once.handling(ctx.inbound.channel, ctx.inbound.message_id):
        await instinct.handler(ctx, ctx.inbound.args)
    if instinct.name == "clear" and ctx.session.state is State.ALERT:
        # "for this chat until /clear": the chat's session grants end with it.
        await ctx.services.permissions.end_session(ctx.session.key)
    raise StopPropagation
