"""What one model turn sees: the frozen system prompt, the thread's activated skills
(orchestrator/skills/active.py), summaries of older turns from
archival memory, the chat's recent messages (``model.history_messages``, bounded by
``model.context_tokens`` through compaction), the owner's message, and this turn's
session note last, so everything before it is a prefix the next turn repeats."""

from __future__ import annotations

import asyncio
import json
from typing import TYPE_CHECKING, Any

from orchestrator.agent.attached import user_content
from orchestrator.agent.compaction import Message, Summarise, clip, compact, tokens
from orchestrator.agent.prompt import frozen_prompt, turn_note
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
) -> list[Message]:
    s = ctx.services
    settings = s.settings.model
    key = ctx.session.key
    rows = await s.store.messages.recent_lines(key, settings.history_messages + 1)
    current = rows[-1][0] if rows and rows[-1][1] == "in" else None
    if current is not None:
        rows = rows[:-1]  # the message this turn answers: it goes last, as ``text``
    system = await frozen_prompt(ctx, now, current or 0)
    since = int(ctx.session.data.frozen_prompt.get("since", "0"))
    rows = (
        [r for r in rows if r[0] >= since][-settings.history_messages :]
        if settings.history_messages
        else []
    )
    group = s.permissions.is_group(key)
    history: list[Message] = [
        {"role": "user", "content": clip(spoken(ctx, row.sender, row.text, group))}
        if row.direction == "in"
        else {"role": "assistant", "content": clip(row.text)}
        for row in rows
    ]
    text = spoken(ctx, ctx.subject.id, text, group)
    first = rows[0][0] if rows else (current or 2**62)
    older = [
        summary
        for start, _end, summary in await s.memory.summaries_before(key, first, SUMMARIES)
        if start >= since
    ]
    if older:
        history.insert(
            0,
            {
                "role": "user",
                "content": "[earlier in this chat, from archival "
                "memory]\n" + "\n".join(f"- {o}" for o in older),
            },
        )
    note = turn_note(ctx)
    if listed := await repo_skills_note(ctx):
        note += "\n" + listed
    # Activated skills sit outside the history: compaction never folds them away.
    skills = skill_messages(ctx.session.data)
    fixed = tokens(system) + tokens(json.dumps(tools)) + tokens(text) + tokens(note)
    fixed += sum(tokens(m["content"]) for m in skills)
    budget = max(RESERVE, settings.context_tokens - fixed - RESERVE)
    history = await compact(history, budget, summarise)
    attachments = ctx.inbound.attachments
    return [
        {"role": "system", "content": system},
        *skills,
        *history,
        # The images and files that came with it (orchestrator/agent/attached.py).
        {"role": "user", "content": await asyncio.to_thread(user_content, text, attachments)},
        {"role": "user", "content": note},
    ]


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
