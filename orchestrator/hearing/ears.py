"""Voice notes become typed text before the gateway sees them.

``Ears.receive`` is the sink every channel delivers to; it stands in front of
``Gateway.receive``. A message without audio goes straight through. A voice note (or an
audio file) is, in a task of its own so no channel waits on a transcription:

1. asked of the gate again (the adapter asked before downloading: nothing of a stranger
   is ever fetched; this is the second lock on the same door);
2. refused in one line when no endpoint is configured (and how to set one), when the
   channel refused it before the download, when it is longer or bigger than
   ``transcription.max_seconds`` / ``max_bytes``, or when a budget is spent: the file is
   removed, nothing reaches the gateway, nothing is stored;
3. read, removed from disk (only the words are kept) and transcribed;
4. answered with "🎙 heard: …" (one line, cut) and handed to the gateway as the text
   the owner would have typed: instincts included, so "stop" said stops.

Order per chat is kept: while a voice note of a chat is being heard, that chat's later
messages wait behind it (a command, starting with "/", never waits: /stop must not).
A crash mid-transcription loses nothing: the note is kept on the host from the moment it
arrives until the gateway has its words (``pending.py``), and ``recover`` hears it again
at the next start (or tells the sender it was lost, should its audio be gone). A note a
channel delivers again after a restart, which the inbox has already, is not heard twice.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Awaitable, Callable
from dataclasses import replace
from pathlib import Path

from channels.base import InboundSink
from core.events import Attachment, Inbound, SessionKey
from orchestrator.hearing.pending import Pending
from orchestrator.hearing.settings import HOW_TO_SET, TranscriptionSettings
from orchestrator.hearing.transcriber import Transcriber, TranscriptionFailed
from orchestrator.limits import SenderLimits, Verdict
from orchestrator.messenger import PHONE_WIDTH, Messenger
from orchestrator.supervisor import TaskSupervisor

log = logging.getLogger(__name__)
# "🎙 heard: …" is one line on a phone: cut to what the messenger never wraps.
HEARD_CHARS = PHONE_WIDTH - len("🎙 heard: ")


def one_line(text: str, limit: int = HEARD_CHARS) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def clock(seconds: float) -> str:
    whole = int(seconds)
    return f"{whole // 60}:{whole % 60:02d}"


def audio_of(inbound: Inbound) -> Attachment | None:
    return next((a for a in inbound.attachments if a.kind == "audio"), None)


def _remove(path: str) -> None:
    if path:
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass
        except OSError as err:
            log.warning("voice note %s not removed: %s", path, err)


class Ears:
    def __init__(
        self,
        receive: InboundSink,
        allowed: Callable[[Inbound], bool],
        messenger: Messenger,
        supervisor: TaskSupervisor,
        transcriber: Transcriber,
        settings: TranscriptionSettings,
        refusal: Callable[[], str | None] = lambda: None,
        member_rate: float = 30.0,
        pending: Pending | None = None,
        seen: Callable[[str, str], Awaitable[bool]] | None = None,
    ) -> None:
        self._receive = receive
        self._allowed = allowed
        self._messenger = messenger
        self._supervisor = supervisor
        self.transcriber = transcriber
        self._settings = settings
        self._refusal = refusal  # the daily budget's answer (orchestrator/costs/)
        self._tails: dict[SessionKey, asyncio.Task[None]] = {}
        # A member's voice notes cost a transcription each before the gateway's own
        # limit sees them: the same rate, refused here first (the owner is never limited).
        self._member_rate = member_rate
        self._limits = SenderLimits(member_rate)
        # Notes being heard, kept until the gateway has them; ``seen``: whether the
        # inbox accepted a message (what ``recover`` asks of one a restart found).
        self._pending = pending
        self._seen = seen

    async def receive(self, inbound: Inbound) -> None:
        key = inbound.key
        tail = self._tails.get(key)
        audio = audio_of(inbound)
        if audio is None and (tail is None or inbound.text.lstrip().startswith("/")):
            await self._receive(inbound)  # the common case costs one dict lookup
            return
        if audio is not None and self._pending is not None:
            # Before anything else: from here on a kill cannot lose it.
            self._pending.keep(inbound)
        task = self._supervisor.spawn(
            self._after(tail, inbound, audio), name=f"hear:{key.slug}:{inbound.message_id}"
        )
        self._tails[key] = task
        task.add_done_callback(lambda done: self._untail(key, done))

    def _untail(self, key: SessionKey, done: asyncio.Task[None]) -> None:
        if self._tails.get(key) is done:
            del self._tails[key]

    async def _after(
        self, tail: asyncio.Task[None] | None, inbound: Inbound, audio: Attachment | None
    ) -> None:
        if tail is not None:
            await asyncio.wait({tail})  # its failure is its own (the supervisor logs it)
        if audio is None:
            await self._receive(inbound)
            return
        try:
            heard = await self._hear(inbound, audio)
            if heard is not None:
                rest = tuple(a for a in inbound.attachments if a is not audio)
                await self._receive(replace(inbound, text=heard, attachments=rest))
        except asyncio.CancelledError:
            # Fetch is stopping: the note and its audio are kept for the next start.
            raise
        except BaseException:
            self._done(inbound, audio)
            raise
        # The gateway has its words (or it was refused, said): only the words are kept.
        self._done(inbound, audio)

    def _done(self, inbound: Inbound, audio: Attachment) -> None:
        _remove(audio.path)
        if self._pending is not None:
            self._pending.forget(inbound)

    async def recover(self) -> int:
        """At start: the voice notes a stopped Fetch was still hearing. One the inbox
        has was handed over already (its audio goes); one whose audio is still there is
        heard again, in order; one whose audio is gone is said lost. How many are heard
        again."""
        if self._pending is None:
            return 0
        again = 0
        for inbound in await asyncio.to_thread(self._pending.left):
            audio = audio_of(inbound)
            if audio is None or (
                self._seen is not None and await self._seen(inbound.channel, inbound.message_id)
            ):
                if audio is not None:
                    self._done(inbound, audio)
                else:
                    self._pending.forget(inbound)
                continue
            present: bool = bool(audio.path) and await asyncio.to_thread(Path(audio.path).is_file)
            if present:
                log.info("hearing again voice note %s cut short by a restart", inbound.message_id)
                await self.receive(inbound)
                again += 1
                continue
            self._done(inbound, audio)
            await self._say(
                inbound,
                "🎙 A voice note you sent was lost in a restart before I heard it; "
                "please send it again.",
            )
        return again

    async def _hear(self, inbound: Inbound, audio: Attachment) -> str | None:
        """The words of ``audio``, said back to the sender; None when refused (said)."""
        if not self._allowed(inbound):
            log.info("voice note from non-allowed sender %s dropped", inbound.sender)
            return None
        if not inbound.from_owner:
            verdict = self._limits.check(f"{inbound.channel}:{inbound.sender}")
            if verdict is Verdict.REFUSE_AND_TELL:
                await self._say(
                    inbound,
                    f"🎙 Not heard: more than {self._member_rate:g} voice notes a minute; "
                    "send it again in a minute.",
                )
            if verdict is not Verdict.PASS:
                return None
        if self._seen is not None and await self._seen(inbound.channel, inbound.message_id):
            # Delivered again after a restart (a channel's offline backlog): the gateway
            # has its words already, so it is not heard, said or paid for twice.
            log.info("voice note %s was heard before a restart: not again", inbound.message_id)
            return None
        problem = self._problem(audio)
        if problem is not None:
            await self._say(inbound, f"🎙 Not heard: {problem}")
            return None
        try:
            data = await asyncio.to_thread(Path(audio.path).read_bytes)
        except OSError as err:
            log.warning("voice note %s unreadable: %s", audio.path, err)
            await self._say(inbound, "🎙 Not heard: the voice note could not be read; resend it.")
            return None
        if len(data) > self._settings.max_bytes:  # the declared size can lie
            await self._say(inbound, f"🎙 Not heard: {self._too_big(len(data))}")
            return None
        try:
            heard = await self.transcriber.transcribe(
                data,
                Path(audio.path).name,
                audio.mime or "application/octet-stream",
                audio.seconds,
                session=f"{inbound.channel}:{inbound.chat}",
            )
        except TranscriptionFailed as err:
            log.warning("voice note %s: %s", inbound.message_id, err)
            await self._say(inbound, f"🎙 Not heard: {err}. Type it, or try again later.")
            return None
        if not heard.text:
            await self._say(inbound, "🎙 I heard nothing I could make out; type it, or try again.")
            return None
        await self._say(inbound, f"🎙 heard: {one_line(heard.text)}")
        return heard.text

    def _problem(self, audio: Attachment) -> str | None:
        if audio.refused:
            return audio.refused
        if not self.transcriber.configured:
            return HOW_TO_SET
        limit = self._settings.max_seconds
        if audio.seconds > limit:
            return (
                f"it is {clock(audio.seconds)} long; the limit is {clock(limit)} "
                "(transcription.max_seconds)"
            )
        if audio.size > self._settings.max_bytes:
            return self._too_big(audio.size)
        refused = self._refusal()
        if refused:
            return refused
        if not audio.path:
            return "the audio did not arrive"
        return None

    def _too_big(self, size: int) -> str:
        mb = 1024 * 1024
        return (
            f"it is {size / mb:.1f} MB; the limit is {self._settings.max_bytes / mb:.1f} MB "
            "(transcription.max_bytes)"
        )

    async def _say(self, inbound: Inbound, text: str) -> None:
        try:
            await self._messenger.send(inbound.key, text, reply_to=inbound.message_id)
        except Exception as err:  # the channel is down: the log has it
            log.warning("could not tell %s: %s", inbound.key, err)
