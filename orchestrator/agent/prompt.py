"""The system prompt, frozen per conversation: built once, stored with the session, and
sent byte-identical on every turn so providers can cache the prefix. It is rebuilt only
on /clear (which empties it), when the identity changes, when a memory block it shows
changes (orchestrator/blocks/: its versions are stored with it), or on a new day in the
owner's timezone; what changes between turns goes in ``identity.session_note`` instead."""

from __future__ import annotations

import datetime as dt
import hashlib
from typing import TYPE_CHECKING
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from identity import FrozenContext, Identity, PromptContext, build_system_prompt, session_note
from identity.prompt import MemoryBlock

if TYPE_CHECKING:
    from orchestrator.context import Context


def owner_day(identity: Identity, now: float) -> str:
    try:
        zone: dt.tzinfo = ZoneInfo(identity.alpha.timezone)
    except (ZoneInfoNotFoundError, ValueError):
        zone = dt.UTC
    return dt.datetime.fromtimestamp(now, zone).strftime("%Y-%m-%d (%A)")


# The last identity's digest: it is frozen, and repr-ing its models each message cost
# ~0.1 ms warm and over 1 ms on the first message after start.
_DIGEST: list[tuple[Identity, str]] = []


def identity_digest(identity: Identity) -> str:
    if _DIGEST and _DIGEST[0][0] is identity:
        return _DIGEST[0][1]
    digest = hashlib.sha256(repr(identity).encode()).hexdigest()[:16]
    _DIGEST[:] = [(identity, digest)]
    return digest


async def frozen_prompt(ctx: Context, now: float, message_id: int) -> str:
    """This conversation's system prompt; built (and persisted) only when due.

    ``since`` is stored with it: the first message of the conversation. A conversation
    begins with the first model turn after /clear (or ever), and history never reaches
    back past it; a new day or a new identity rebuilds the prompt but keeps ``since``."""
    s, data = ctx.services, ctx.session.data
    # The owner's and shipped skills are listed in it: a changed set rebuilds it too.
    day, digest = owner_day(s.identity, now), identity_digest(s.identity) + s.skills.digest()
    # The pack as the model sees it (task_create's agent): a changed pack rebuilds it too.
    pack = tuple(f"{a.name}: {a.role}" for a in s.runner.pack.agents.values())
    digest += hashlib.sha256(repr(pack).encode()).hexdigest()[:8]
    stored = data.frozen_prompt
    since = stored.get("since") or str(message_id)
    # Persona, owner and the active repo's block: an edit (or another repo) rebuilds it.
    blocks = await s.blocks.for_prompt(data.repo)
    # Someone besides the owner speaks here: the prompt says whose words count, and what
    # the owner keeps about themselves (the owner block) is not shown to a member's turn.
    shared = not ctx.subject.is_owner or s.permissions.is_group(ctx.session.key)
    if not ctx.subject.is_owner:
        blocks = tuple(b for b in blocks if b.kind != "owner")
    digest += "+shared" if shared else ""
    versions = s.blocks.digest(blocks)
    if (
        stored.get("text")
        and stored.get("day") == day
        and stored.get("identity") == digest
        and stored.get("blocks") == versions
    ):
        return stored["text"]
    text = build_system_prompt(
        s.identity,
        FrozenContext(
            workspace=str(s.workspace.root),
            repos=tuple(s.workspace.repos()),
            day=day,
            skills=tuple((k.name, k.description) for k in s.skills.base),
            pack=pack,
            blocks=tuple(MemoryBlock(b.kind, b.text, b.limit, b.scope) for b in blocks),
            shared=shared,
        ),
    )
    data.frozen_prompt = {
        "text": text,
        "day": day,
        "identity": digest,
        "blocks": versions,
        "since": since,
    }
    await ctx.session.persist()
    return text


def turn_note(ctx: Context) -> str:
    """The session as it is now, for the owner's message of this turn."""
    s = ctx.services
    repo = ctx.session.data.repo
    repos = tuple(s.workspace.repos())
    return session_note(
        PromptContext(
            state=ctx.session.state,
            repos=repos,
            active_repo=repo,
            repo_status=s.workspace.describe(repo) if repo and repo in repos else None,
            harness=ctx.session.data.harness or s.runner.default_harness(),
        )
    )
