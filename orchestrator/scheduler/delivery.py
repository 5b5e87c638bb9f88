"""What firing a job does, behind one port so the scheduler's bookkeeping is the same for
every way out.

``ChatDelivery`` (the product): a reminder is a message to the chat it was set in; a
prompt job is a fresh session fed through the gateway exactly like a phone message from
its creator (the owner, or the member who made it, with that member's authority), whose
replies the messenger routes to the chat it was made in.

After a crash mid-delivery the scheduler asks ``confirm``: did it arrive? A prompt job can
say (the gateway records every accepted message id, durably, and refuses a second one);
a chat message cannot (the channel's network send and our database write are never one
transaction), so an interrupted reminder is reported to the owner, never sent twice.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Protocol

from core.events import Inbound, SessionKey
from orchestrator.messenger import Messenger
from orchestrator.scheduler.jobs import OWNER, Claim
from orchestrator.scheduler.localtime import zone
from orchestrator.scheduler.ntfy import Ntfy
from orchestrator.scheduler.words import clock
from orchestrator.store import Store

Inject = Callable[[Inbound], Awaitable[None]]


class DeliveryError(Exception):
    """A delivery that did not happen (it is retried with backoff)."""


class Delivery(Protocol):
    async def deliver(self, claim: Claim) -> None:
        """Fire the job's slot; raise if it did not happen."""

    async def confirm(self, claim: Claim) -> bool | None:
        """After a crash mid-delivery: True delivered, False not, None cannot tell."""


def run_key(claim: Claim) -> str:
    """The id a fired slot carries everywhere (gateway dedupe, logs): job and slot."""
    return f"job:{claim.job.id}:{int(claim.run.slot)}"


def job_session(claim: Claim) -> SessionKey:
    """A fresh session per run, on the owner's channel, so the job starts from nothing."""
    return SessionKey(claim.job.channel, f"job-{claim.job.id}-{claim.run.id}")


def late_note(claim: Claim) -> str:
    if not claim.run.late:
        return ""
    due = clock(claim.run.slot, zone(claim.job.tz))
    return f"\n(due {due}; I was offline then, so it comes late)"


class ChatDelivery:
    def __init__(
        self, store: Store, messenger: Messenger, inject: Inject, ntfy: Ntfy | None
    ) -> None:
        self._store = store
        self._messenger = messenger
        self._inject = inject
        self._ntfy = ntfy

    async def deliver(self, claim: Claim) -> None:
        job = claim.job
        if job.kind == "reminder":
            await self._messenger.send(job.key, f"⏰ {job.text}{late_note(claim)}")
            if self._ntfy is not None:
                await self._ntfy.push("Fetch reminder", job.text)
            return
        session = job_session(claim)  # routed to the owner's chat by the scheduler
        await self._messenger.send(
            job.key, f"🔁 Job #{job.id} ({job.spec}): {job.text}{late_note(claim)}"
        )
        # It speaks as whoever made it: a member's job has the member's authority (their
        # tools, their memory), never the owner's; the gate still asks if they may.
        owners = job.creator == OWNER
        await self._inject(
            Inbound(
                channel=job.channel,
                chat=session.chat,
                sender=job.chat if owners else job.creator,
                message_id=run_key(claim),
                text=job.text,
                from_owner=owners,
            )
        )
        if not await self._accepted(claim):
            raise DeliveryError("the gateway did not accept it (Fetch is stopping)")

    async def confirm(self, claim: Claim) -> bool | None:
        if claim.job.kind == "reminder":
            return None
        return await self._accepted(claim)

    async def _accepted(self, claim: Claim) -> bool:
        return await self._store.inbox.seen(claim.job.channel, run_key(claim))
