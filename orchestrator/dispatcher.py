"""The pipeline for one message: instincts first (no model), then the FSM group."""

from __future__ import annotations

import logging
import re

from core.errors import FetchError, StopPropagation
from core.state import State
from orchestrator.context import Context
from orchestrator.conversation import handle_text

log = logging.getLogger(__name__)
COMMAND = re.compile(r"^/([A-Za-z][\w-]{0,31})(?:@\S+)?(?:\s+(.*))?$", re.DOTALL)


# Words people type on a phone without the slash; alone in a message they are commands.
BARE_COMMANDS = {"undo", "stop", "status", "help", "commands", "cancel"}


def parse_command(text: str) -> tuple[str, str] | None:
    bare = text.strip().lower().rstrip("!.")
    if bare in BARE_COMMANDS:
        return bare, ""
    m = COMMAND.match(text.strip())
    if not m:
        return None
    return m.group(1).lower(), (m.group(2) or "").strip()


async def dispatch(ctx: Context) -> None:
    """Run one message through the groups; every failure becomes a clear reply."""
    try:
        await _instincts(ctx)
        await handle_text(ctx)
    except StopPropagation:
        return
    except FetchError as err:
        await ctx.reply(f"⚠️ {err}")
    except Exception:  # the last line of defence: log, answer, keep serving
        log.exception("handler failed for %s", ctx.session.key)
        await ctx.reply("⚠️ Something went wrong on my side (it's in the log). "
                        "Your code is untouched; try again.")


async def _instincts(ctx: Context) -> None:
    parsed = parse_command(ctx.text)
    if parsed is None:
        if ctx.text.startswith("/"):
            await ctx.reply("🤔 That looks like a command but isn't one. /help lists them.")
            raise StopPropagation
        return
    word, args = parsed
    registry = ctx.services.instincts
    instinct = registry.get(word)
    if instinct is None:
        close = registry.suggest(word)
        hint = f" Did you mean {', '.join('/' + c for c in close)}?" if close else ""
        await ctx.reply(f"🤔 I don't know /{word}.{hint} /help lists what I can do.")
        raise StopPropagation
    if not instinct.while_working and ctx.session.fsm_state is State.WORKING:
        await ctx.reply(f"⏳ /{instinct.name} has to wait until the task finishes (/stop ends it).")
        raise StopPropagation
    ctx.args = args
    await instinct.handler(ctx, args)
    raise StopPropagation
