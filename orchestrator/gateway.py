"""The gateway: every adapter's ``Inbound`` enters here.

In order: the security gate (owner or allowlist, nothing else reaches anything; the
same ``core.gate.Gate`` adapters consult before keeping anything), the sender's rate
limit (over it: refused at once, never waited for), durable de-duplication (channel +
message id, in SQLite before anything runs), input validation, the command word parsed
once onto the event (``command``/``args``; nothing downstream parses again), then either
an immediate answer (``/stop``, ``/status`` bypass the queue) or the sender's queue in
that session.

The owner first: ``receive`` never waits on anyone's behalf (a limit refuses, a queue
only takes), so an adapter handing over events one by one is never held up by one
sender's flood. Queues are per sender within a session: a member's backlog in a group
is theirs alone. Work still runs one message at a time per session (the session's lock,
which is first come first served), so the owner's next message runs after at most the
one message being handled, not after the member's whole backlog. A queued message stays
``queued`` in SQLite until handled, so a restart re-runs what it had not finished.
"""

from __future__ import annotations

import asyncio
import logging
import re
import unicodedata
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, fields
from typing import Any

from core.events import Attachment, Inbound, SessionKey
from core.gate import AllowlistGate
from core.state import State
from core.throttle import LogThrottle
from orchestrator.commandline import with_command
from orchestrator.context import Context
from orchestrator.dispatcher import dispatch
from orchestrator.limits import SenderLimits, Verdict
from orchestrator.services import Services
from orchestrator.session import Session, Turn
from orchestrator.store.errors import STORAGE_ERRORS, storage_error

log = logging.getLogger(__name__)
ANSI = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)?|[@-Z\\-_])")
CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f\u200b-\u200f\u202a-\u202e\u2066-\u2069]")


@dataclass(frozen=True, slots=True)
class Cleaned:
    text: str
    problem: str | None


def clean_text(raw: str, trigger: str, limit: int) -> Cleaned:
    if len(raw) > limit:
        return Cleaned(
            "",
            f"That message is {len(raw):,} characters; my limit is {limit:,}. Send a shorter one.",
        )
    text = unicodedata.normalize("NFC", raw)
    text = CONTROL.sub("", ANSI.sub("", text)).replace("\r\n", "\n").replace("\r", "\n").strip()
    if trigger and text.lower().startswith(trigger.lower()):
        text = text[len(trigger) :].lstrip(" ,:").strip()
    if not text:
        return Cleaned("", "I got an empty message. Tell me what to do, or /help.")
    return Cleaned(text, None)


def said(inbound: Inbound) -> str:
    """A reaction carries no text: the emoji is what it says (👍 answers a diff)."""
    if inbound.reaction and not inbound.text.strip():
        return inbound.reaction
    return inbound.text


def to_payload(inbound: Inbound) -> dict[str, Any]:
    # Not dataclasses.asdict: its deep copy cost more than the rest of the gateway.
    payload = {f.name: getattr(inbound, f.name) for f in fields(Inbound)}
    payload["attachments"] = [
        {f.name: getattr(a, f.name) for f in fields(Attachment)} for a in inbound.attachments
    ]
    return payload


def from_payload(payload: dict[str, Any]) -> Inbound:
    attachments = tuple(Attachment(**a) for a in payload.pop("attachments", []) or [])
    return Inbound(**payload, attachments=attachments)


# One queue per sender in a session.
QueueKey = tuple[SessionKey, str]


def answers_pending_diff(session: Session, inbound: Inbound) -> bool:
    """A reaction is an instruction only on the diff that waits now: 👍 on an old or
    already answered diff (or on any other message) approves nothing and starts nothing."""
    target = session.data.approval_message_id
    return session.state is State.GUARDING and target is not None and inbound.reply_to == target


class Gateway:
    def __init__(self, services: Services) -> None:
        self._s = services
        self._gate = AllowlistGate(services.settings.allowlist)
        self._queues: dict[QueueKey, asyncio.Queue[tuple[Inbound, str]]] = {}
        self._limits = SenderLimits(services.settings.gateway.rate_per_minute)
        self._strangers = LogThrottle(log)
        self._accepting = True
        self._in_flight = 0  # accepted but not yet fully handled
        # Free text that came while the chat's task ran, per chat, in order: still
        # ``queued`` in SQLite (a restart replays it), queued again once the chat is
        # idle (``Sessions.on_idle``), never dropped.
        self._deferred: dict[SessionKey, list[tuple[Inbound, str]]] = {}
        services.sessions.on_idle = self._release

    def allowed(self, inbound: Inbound) -> bool:
        return self._gate.allows(inbound)

    def addressed(self, inbound: Inbound) -> bool:
        """In groups only messages that start with the trigger, or quote one of Fetch's
        messages, are for Fetch (a reaction is addressed by what it reacts to)."""
        if not inbound.is_group or inbound.reaction:
            return True
        if inbound.reply_to and self._s.messenger.sent_by_fetch(inbound.channel, inbound.reply_to):
            return True
        trigger = self._s.settings.gateway.trigger.lower()
        return inbound.text.lstrip().lower().startswith(trigger)

    async def receive(self, inbound: Inbound) -> None:
        """The sink every channel delivers to."""
        if not self._accepting:
            return
        if not self.allowed(inbound):
            # No reply, no model, no tool: strangers only reach the log (rate-limited).
            self._strangers.info(
                "dropped message from non-allowed sender %s on %s", inbound.sender, inbound.channel
            )
            return
        if not self.addressed(inbound):
            log.debug("group message without %s ignored", self._s.settings.gateway.trigger)
            return
        if not inbound.from_owner and not self._within_limit(inbound):
            return
        try:
            accepted = await self._s.store.inbox.accept(
                inbound.channel, inbound.message_id, inbound.key, to_payload(inbound)
            )
        except STORAGE_ERRORS as err:
            # A full disk or a read-only or damaged database: the sender hears it, the
            # channel's reader lives on, and the next message tries again.
            await self._unsaved(inbound, err)
            return
        if not accepted:
            log.info("duplicate %s:%s ignored", inbound.channel, inbound.message_id)
            return
        await self._admit(inbound)

    def _within_limit(self, inbound: Inbound) -> bool:
        verdict = self._limits.check(f"{inbound.channel}:{inbound.sender}")
        if verdict is Verdict.PASS:
            return True
        log.info("rate limit: refused %s from %s", inbound.message_id, inbound.sender)
        if verdict is Verdict.REFUSE_AND_TELL:
            # Told in the background: a send can be slow (WhatsApp paces), and receive
            # must not wait for it.
            rate = self._s.settings.gateway.rate_per_minute
            text = (
                f"⏳ You are sending faster than {rate:g} messages a minute; I am "
                "skipping your messages for now. Send it again in a minute."
            )
            self._s.supervisor.spawn(
                self._tell(inbound.key, text), name=f"limit:{inbound.key.slug}"
            )
        return False

    async def _tell(self, key: SessionKey, text: str) -> None:
        try:
            await self._s.messenger.send(key, text)
        except Exception as err:  # a refusal notice that cannot be sent is not an error
            log.info("rate limit notice to %s not sent: %s", key, err)

    async def _admit(self, inbound: Inbound) -> None:
        settings = self._s.settings.gateway
        cleaned = clean_text(said(inbound), settings.trigger, settings.max_message_chars)
        logged = cleaned.text or inbound.text[:200]
        # Who said it, kept with the line: the model reads a group's history by speaker.
        sender = self._s.permissions.subject_of(inbound).id
        # A linked device's line belongs to the session it shares (/link), and the pair's
        # replies follow the owner to the chat they wrote from (orchestrator/links.py).
        home = self._s.links.home_of(inbound.key)
        self._s.links.spoke(inbound.key)
        self._s.store.messages.log(home, "in", logged, sender=sender)
        try:
            self._s.journal.append(
                home,
                "owner" if inbound.from_owner else inbound.sender,
                logged,
                message_id=inbound.message_id,
            )
        except STORAGE_ERRORS as err:
            with suppress(*STORAGE_ERRORS):  # accepted but not run: not to be replayed
                await self._s.store.inbox.finish(inbound.channel, inbound.message_id)
            await self._unsaved(inbound, err)
            return
        if cleaned.problem is not None:
            await self._s.messenger.send(inbound.key, f"⚠️ {cleaned.problem}")
            await self._s.store.inbox.finish(inbound.channel, inbound.message_id)
            return
        inbound = with_command(inbound, cleaned.text)
        instinct = self._s.instincts.get(inbound.command) if inbound.command else None
        self._in_flight += 1
        if instinct is not None and instinct.bypass_queue:
            self._s.supervisor.spawn(
                self._handle(inbound, cleaned.text),
                name=f"bypass:{inbound.key.slug}:{instinct.name}",
            )
            return
        self._queue(inbound).put_nowait((inbound, cleaned.text))

    async def _unsaved(self, inbound: Inbound, err: BaseException) -> None:
        problem = storage_error(err)
        if problem is None:
            raise err
        log.error("message %s not saved: %s", inbound.message_id, err)
        try:
            await self._s.messenger.send(inbound.key, f"⚠️ {problem}")
        except Exception as send_err:  # the channel is down too: the log has it
            log.warning("could not tell %s: %s", inbound.key, send_err)

    def _queue(self, inbound: Inbound) -> asyncio.Queue[tuple[Inbound, str]]:
        qkey = (inbound.key, inbound.sender)
        queue = self._queues.get(qkey)
        if queue is None:
            queue = asyncio.Queue()
            self._queues[qkey] = queue
            self._s.supervisor.spawn(
                self._worker(inbound.key, queue),
                name=f"session:{inbound.key.slug}:{inbound.sender}",
            )
        return queue

    async def _worker(self, key: SessionKey, queue: asyncio.Queue[tuple[Inbound, str]]) -> None:
        while True:
            inbound, text = await queue.get()
            try:
                session = await self._s.sessions.get(self._s.links.home_of(key))
                # The session's lock is FIFO: each sender's worker waits its turn, so one
                # sender's backlog cannot starve the others in the same chat.
                async with session.lock:
                    if inbound.reaction and not answers_pending_diff(session, inbound):
                        log.info(
                            "reaction %s on %s ignored: not the diff that waits",
                            inbound.reaction,
                            inbound.reply_to,
                        )
                        self._in_flight -= 1
                        await self._s.store.inbox.finish(inbound.channel, inbound.message_id)
                        continue
                    with self._turn(session, inbound):
                        await self._handle(inbound, text)
            except Exception:
                # Even a failed error reply (channel down) must not end this chat's
                # worker: the next message still has to be served.
                log.exception("message %s in %s failed", inbound.message_id, key)

    @contextmanager
    def _turn(self, session: Session, inbound: Inbound) -> Iterator[None]:
        """``session.turn`` while the worker handles ``inbound`` (a /stop reads it)."""
        session.turn = Turn(self._s.permissions.subject_of(inbound).id)
        try:
            yield
        finally:
            session.turn = None

    async def _handle(self, inbound: Inbound, text: str) -> None:
        session = await self._s.sessions.get(self._s.links.home_of(inbound.key))
        ctx = Context(inbound=inbound, session=session, services=self._s, text=text)
        deferred = False
        try:
            await dispatch(ctx)
            deferred = ctx.deferred
            if not deferred:
                self._s.memory.observe(session.key)
        finally:
            if deferred:
                self._defer(session, inbound, text)
            else:
                self._in_flight -= 1
                await self._s.store.inbox.finish(inbound.channel, inbound.message_id)

    def _defer(self, session: Session, inbound: Inbound, text: str) -> None:
        """Keep a message that waits for the chat's task (still in flight, still queued
        in SQLite); if the chat is idle already, it goes back into its queue now."""
        self._deferred.setdefault(session.key, []).append((inbound, text))
        if session.state is State.ALERT:
            self._release(session.key)

    def _release(self, key: SessionKey) -> None:
        """The chat is idle: its waiting messages run, in the order they came, and a
        member's diff kept for the owner's busy chat is offered there (approvals.py)."""
        for inbound, text in self._deferred.pop(key, ()):
            self._queue(inbound).put_nowait((inbound, text))
        self._s.approvals.rested(key, self._s.supervisor)

    async def replay_unfinished(self, unfinished: list[dict[str, Any]]) -> int:
        """After a restart: queue again the accepted messages that were not handled.

        ``unfinished`` is the inbox's ``queued()`` read BEFORE any channel or the
        scheduler started: a message accepted live during start-up is queued already
        (and still ``queued`` in SQLite), so reading the inbox now would run it twice."""
        count = 0
        for payload in unfinished:
            inbound = from_payload(payload)
            cleaned = clean_text(
                said(inbound),
                self._s.settings.gateway.trigger,
                self._s.settings.gateway.max_message_chars,
            )
            if cleaned.problem is None:
                self._in_flight += 1
                self._queue(inbound).put_nowait((with_command(inbound, cleaned.text), cleaned.text))
                count += 1
            else:
                await self._s.store.inbox.finish(inbound.channel, inbound.message_id)
        return count

    def close(self) -> None:
        self._accepting = False

    def idle(self) -> bool:
        # A message kept for a chat's task waits on that task (or on the owner's answer
        # to its diff), not on the gateway: it counts again once it is queued again.
        kept = sum(map(len, self._deferred.values()))
        return self._in_flight - kept == 0
