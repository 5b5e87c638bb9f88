"""What one model turn sees: the frozen system prompt, the thread's activated skills
(orchestrator/skills/active.py), summaries of older turns from archival memory, the
history window (orchestrator/agent/window.py: the chat's recent messages, at most
``model.history_messages``, trimmed and folded in blocks to ``model.context_tokens``),
the owner's message, and this turn's session note last. Between two of the window's
rebases everything before the note is a prefix the next turn repeats byte for byte."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from core.events import Attachment
from orchestrator.agent.attached import user_content
from orchestrator.agent.compaction import Message, Summarise, clip, tokens
from orchestrator.agent.prompt import frozen_prompt, turn_note
from orchestrator.agent.window import Row, WindowState, fit
from orchestrator.skills.active import messages as skill_messages
from orchestrator.skills.prompt import repo_skills_note

if TYPE_CHECKING:
    from orchestrator.context import Context

SUMMARIES = 3  # archived chunks shown, newest; memory_search reaches the rest
OWNER = "owner"
RESERVE = 1_000  # tokens left for the model's answer and this turn's tool results


async def build_messages(
    ctx: Context,
    text: str,
    now: float,
    tools: list[dict[str, Any]],
    summarise: Summarise | None = None,
    on_inbound: Callable[[int | None], None] | None = None,
) -> list[Message]:
    """``on_inbound``: told the id of the message this turn answers (None: none), before
    any summary call, so the caller need not read the store again for it (the ledger)."""
    s = ctx.services
    settings = s.settings.model
    key = ctx.session.key
    data = ctx.session.data
    limit = settings.history_messages
    # One more than the window holds, so an overflow is seen (window.fit).
    rows = await s.store.messages.recent_lines(key, limit + 2)
    current = rows[-1][0] if rows and rows[-1][1] == "in" else None
    if on_inbound is not None:
        on_inbound(current)
    if current is not None:
        rows = rows[:-1]  # the message this turn answers: it goes last, as ``text``
    system = await frozen_prompt(ctx, now, current or 0)
    since = int(data.frozen_prompt.get("since", "0"))
    window = WindowState.load(data.history_window, since)
    group = s.permissions.is_group(key)
    lines: list[Row] = [
        (
            row.id,
            {"role": "user", "content": clip(spoken(ctx, row.sender, row.text, group))}
            if row.direction == "in"
            else {"role": "assistant", "content": clip(row.text)},
        )
        for row in rows
        if row.id >= max(since, window.start)
    ]
    if not limit:
        lines = []
    text = spoken(ctx, ctx.subject.id, text, group)
    changed = await _read_archive(ctx, window, lines, current)
    note = turn_note(ctx)
    if listed := await repo_skills_note(ctx):
        note += "\n" + listed
    # Activated skills sit outside the history: compaction never folds them away.
    skills = skill_messages(data)
    archive = _archive_message(window)
    fixed = tokens(system) + tokens(json.dumps(tools)) + tokens(text) + tokens(note)
    fixed += sum(tokens(m["content"]) for m in [*skills, *archive])
    budget = max(RESERVE, settings.context_tokens - fixed - RESERVE)
    history, rebased = await fit(window, lines, limit, budget, summarise)
    if rebased:
        # The window moved: the archival summaries are those before its new start.
        await _read_archive(ctx, window, [], current)
        archive = _archive_message(window)
    if changed or rebased:
        data.history_window = window.dump()
        await ctx.session.persist()
    attachments = ctx.inbound.attachments
    return [
        {"role": "system", "content": system},
        *skills,
        *archive,
        *history,
        # The images and files that came with it (orchestrator/agent/attached.py).
        {"role": "user", "content": await _content(text, attachments)},
        {"role": "user", "content": note},
    ]


async def _content(text: str, attachments: tuple[Attachment, ...]) -> str | list[dict[str, Any]]:
    """The turn's user content; files are read in a thread, a text alone needs none (a
    thread woken per message is ~0.1-1 ms)."""
    if not attachments:
        return text
    return await asyncio.to_thread(user_content, text, attachments)


async def _read_archive(
    ctx: Context, window: WindowState, lines: list[Row], current: int | None
) -> bool:
    """Read the archival summaries of the chunks before the oldest message shown, only
    when that message changed (so they stay the same bytes between rebases); True when
    they were read."""
    oldest = window.oldest(lines, current)
    if oldest == window.archived_before:
        return False
    found = await ctx.services.memory.summaries_before(ctx.session.key, oldest, SUMMARIES)
    window.archive = [summary for start, _end, summary in found if start >= window.since]
    window.archived_before = oldest
    return True


def _archive_message(window: WindowState) -> list[Message]:
    if not window.archive:
        return []
    lines = "\n".join(f"- {o}" for o in window.archive)
    return [{"role": "user", "content": "[earlier in this chat, from archival memory]\n" + lines}]


def spoken(ctx: Context, sender: str, text: str, group: bool) -> str:
    """A person's line as the model reads it: who said it and with which profile, so a
    member's words are never taken for the owner's (the system prompt says only the
    owner's lines carry the owner's authority). The owner's own lines in their own chat
    stay bare; a line logged before senders were kept ('') too."""
    if not sender or (sender == OWNER and not group):
        return text
    if sender == OWNER:
        return f"[owner] {text}"
    who = ctx.services.permissions.subject_named(sender)
    return f"[{who.id} · {who.profile}] {text}"
