"""The WhatsApp channel: neonize events in, paced WhatsApp messages out.

Inbound: neonize calls back from its own threads; ``_post`` only hands each event to
this channel's loop (``call_soon_threadsafe`` into a queue of two lanes, the owner's
events first: ``lanes.py``), and one owned task, the pump, handles them in order:
normalise (``normalize.py``), drop what is not addressed to Fetch (``trigger.py``,
logged only), ask the gate whether the sender may reach Fetch at all (if not: nothing
is downloaded, written or recorded, and the log line is rate-limited), learn the
sender's LID -> number mapping, download media, remember the chat wrote, deliver to the
gateway, send a read receipt. Fetch's own messages echoed back are recognised by the
text being sent right now (``echo.py``) or by their id, however slow the send.
Outbound (one message, already in WhatsApp markup
and cut to size by the messenger, see ``format``): reply-only, pacing, quote the message
replied to, edit in place. A second owned task, the monitor
(``connection.py``), probes the connection and reconnects with backoff; alerts (logged
out, banned, session replaced) stop it and go to ``on_alert`` and ``health()``. Both
tasks are the application's (``start``'s spawner); ``stop`` cancels them in reverse.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict
from collections.abc import Callable, Coroutine
from contextlib import suppress
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from channels.base import Capabilities, InboundSink
from channels.whatsapp import _neonize as nz
from channels.whatsapp import media
from channels.whatsapp.client import NeonizeClient, WhatsAppClient
from channels.whatsapp.connection import PAIR_HINT, ConnectionSupervisor
from channels.whatsapp.echo import PendingSends
from channels.whatsapp.errors import RecipientNotAllowed, WhatsAppUnavailable
from channels.whatsapp.format import SAFE_CHARS, to_whatsapp
from channels.whatsapp.health import Backoff, ConnectionHealth
from channels.whatsapp.jids import (
    LID_SERVER,
    USER_SERVER,
    bare_user,
    jid_str,
    lid_pair,
    parse_jid,
    participant,
)
from channels.whatsapp.lanes import Lanes
from channels.whatsapp.ledger import Ledger
from channels.whatsapp.normalize import MediaRef, NormalizeContext, text_of
from channels.whatsapp.pacing import Pacer
from channels.whatsapp.trigger import TriggerRules, route
from channels.whatsapp_settings import WhatsAppSettings
from core.errors import ChannelError, SendFailed
from core.events import Attachment, Inbound, Outbound, OutboundFile, SendResult
from core.gate import Gate, OwnerOnlyGate
from core.tasks import Spawner, cancel_and_wait
from core.throttle import LogThrottle

log = logging.getLogger(__name__)
AlertHandler = Callable[[str], None]
SEEN_KEEP = 500  # recent inbound messages kept for quoting and read receipts
DOWNLOAD_TIMEOUT = 120.0
# What WhatsApp takes from a linked device: images up to 16 MB, documents up to 100 MB.
IMAGE_LIMIT = 16 * 1024 * 1024
FILE_LIMIT = 100 * 1024 * 1024
STOP_GRACE = 2.0


@dataclass(frozen=True, slots=True)
class _Seen:
    """A recent inbound message: enough to quote it in a reply and to mark it read."""

    chat: Any  # JID
    sender: Any  # JID
    participant: str  # the sender as a quote names them (phone-number JID when known)
    text: str


class WhatsAppChannel:
    name = "whatsapp"

    def __init__(
        self,
        settings: WhatsAppSettings,
        home: Path,
        *,
        client: WhatsAppClient | None = None,
        trigger: str = "@fetch",
        gate: Gate | None = None,
        on_alert: AlertHandler | None = None,
        backoff: Backoff | None = None,
        probe_interval: float = 60.0,
        pacer: Pacer | None = None,
        clock: Callable[[], float] = time.time,
        max_audio_seconds: int = 0,
    ) -> None:
        self.capabilities = Capabilities(
            message_limit=SAFE_CHARS,
            render=to_whatsapp,
            can_edit=True,
            markup="whatsapp",
            can_react=True,
            typing=True,
            min_send_interval=settings.min_send_interval_seconds,
            sends_per_minute=settings.sends_per_minute,
            reply_only=True,
            file_limit=FILE_LIMIT,
            image_limit=IMAGE_LIMIT,
        )
        self.on_alert = on_alert
        self._settings = settings
        # Longer audio is refused before its download (transcription.max_seconds).
        self._max_audio_seconds = max_audio_seconds
        self._store_dir = home / "whatsapp"
        self._sessions_root = home / "sessions"
        self._client: WhatsAppClient = client or NeonizeClient(self._store_dir / "device.db")
        self._rules = TriggerRules.from_settings(settings, trigger)
        self._owner = settings.owner or None  # digits, normalised by the settings
        # The owner's direct chat, from the configured number: Fetch may always write
        # there (a group's diff, a member's question), though the owner never wrote first.
        self._owner_dm = f"{self._owner}@{USER_SERVER}" if self._owner else None
        # The gateway's own question, asked before anything of the sender's is kept.
        self._gate: Gate = gate or OwnerOnlyGate()
        self._quiet_log = LogThrottle(log)
        self._pending = PendingSends()
        self._pacer = pacer or Pacer(settings.min_send_interval_seconds, settings.sends_per_minute)
        self._health = ConnectionHealth(clock)
        self._conn = ConnectionSupervisor(
            self._client,
            self._health,
            self._alert,
            backoff=backoff or Backoff(),
            probe_interval=probe_interval,
        )
        self._ledger = Ledger(self._store_dir / "ledger.json")
        self._seen: OrderedDict[str, _Seen] = OrderedDict()
        self._sink: InboundSink | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._spawner: Spawner | None = None
        self._tasks: list[asyncio.Task[Any]] = []  # in start order
        self._new_loop_state()

    def _new_loop_state(self) -> None:
        self._events: Lanes[Any] = Lanes()

    # -- lifecycle -------------------------------------------------------------------

    async def start(self, sink: InboundSink, spawner: Spawner) -> None:
        if self._sink is not None:
            raise RuntimeError("whatsapp channel already started")
        self._sink = sink
        self._spawner = spawner
        self._loop = asyncio.get_running_loop()
        self._new_loop_state()
        self._conn.reset()
        try:
            await self._start()
        except BaseException:
            await self.stop()  # a failed start leaves nothing running
            raise

    async def _start(self) -> None:
        self._store_dir.mkdir(parents=True, exist_ok=True)
        self._store_dir.chmod(0o700)  # the device store holds the session keys
        self._client.set_event_sink(self._post)
        self._spawn(self._pump(), "channel:whatsapp:events")
        try:
            paired = await self._client.paired()
        except ChannelError as err:  # e.g. an unreadable device store
            self._conn.alert(f"{err}: {PAIR_HINT}")
            return
        if not paired:
            # Not fatal for Fetch: other channels keep working; /status says what to do.
            self._conn.alert(f"not paired with a phone: {PAIR_HINT}")
            return
        self._health.set("connecting")
        try:
            await self._client.connect()
        except Exception as err:
            log.warning("whatsapp: connect failed: %s", err)
            self._conn.dropped(f"connect failed: {err}")
        self._spawn(self._conn.run(), "channel:whatsapp:monitor")

    async def link(self) -> bool:
        """Link this device from a running Fetch (the dashboard's button): connect
        unpaired so WhatsApp sends QR codes (``pairing_code()``); once the phone scans
        one, the channel runs as if it had started paired. False: already paired."""
        if self._sink is None:
            raise ChannelError("the WhatsApp channel is not running")
        if await self._client.paired():
            return False
        if self._conn.linking:
            return True  # codes are on their way (or shown): one connection is enough
        self._conn.linking = True
        self._health.alert = None  # the "not paired" alert is being acted on
        self._health.set("not paired")
        try:
            await self._client.connect()
        except Exception as err:
            self._conn.linking = False
            raise ChannelError(f"WhatsApp could not be reached to link: {err}") from err
        return True

    def _paired_now(self, event: Any) -> None:
        """The phone scanned a code (PairStatus): success starts the connection monitor,
        as a start on a paired device does; a failure is said and linking can retry."""
        self._conn.linking = False
        if event.Status != nz.PairStatusEv.SUCCESS:
            self._health.qr = None
            self._conn.alert(f"linking failed: {event.Error or 'unknown error'}: {PAIR_HINT}")
            return
        log.info("whatsapp: linked to +%s", event.ID.User)
        self._spawn(self._conn.run(), "channel:whatsapp:monitor")

    def pairing_code(self) -> str | None:
        """The QR payload WhatsApp last sent asking to link this device, while it waits."""
        return None if self._health.connected else self._health.qr

    async def stop(self) -> None:
        """Reverse of start: no more reconnects, no more events, then finish the queue."""
        if self._sink is None:
            return
        await self._cancel("channel:whatsapp:monitor")
        self._client.set_event_sink(None)
        try:
            async with asyncio.timeout(15):
                await self._client.disconnect()
        except Exception as err:  # stopping must finish even if WhatsApp does not answer
            log.warning("whatsapp: disconnect failed: %s", err)
        # Events already received are handed to the gateway if that is quick.
        with suppress(TimeoutError):
            async with asyncio.timeout(STOP_GRACE):
                await self._events.join()
        await self._cancel("")
        self._health.set("stopped")
        self._sink = None
        self._loop = None
        self._spawner = None

    async def _cancel(self, prefix: str) -> None:
        """Cancel and await this channel's tasks named ``prefix``*, newest first."""
        tasks = [t for t in reversed(self._tasks) if t.get_name().startswith(prefix)]
        await cancel_and_wait(*tasks)
        self._tasks = [t for t in self._tasks if t not in tasks]

    def _spawn(self, coro: Coroutine[Any, Any, None], name: str) -> None:
        # Owned by the application's supervisor, which logs a failure; tracked here too
        # so that stop() can end exactly what start() began.
        assert self._spawner is not None
        self._tasks.append(self._spawner.spawn(coro, name=name))

    def health(self) -> str:
        return self._health.line()

    def _alert(self, text: str) -> None:
        if self.on_alert is not None:
            self.on_alert(text)

    # -- inbound ---------------------------------------------------------------------

    def _post(self, event: Any) -> None:
        """Called by neonize from any thread: hand over to the loop, touch nothing else."""
        loop = self._loop
        if loop is None or loop.is_closed():
            return
        with suppress(RuntimeError):  # the loop closed between the check and the call
            loop.call_soon_threadsafe(self._enqueue, event)

    def _enqueue(self, event: Any) -> None:
        self._events.put(event, first=self._owners_lane(event))

    def _owners_lane(self, event: Any) -> bool:
        """The owner's messages (and connection events) go first; a guess from the raw
        event, before normalising: it only orders, the gate still decides."""
        if not isinstance(event, nz.MessageEv):
            return True
        source = event.Info.MessageSource
        if source.IsFromMe:
            return True
        users = {bare_user(str(source.Sender.User)), bare_user(str(source.SenderAlt.User))}
        if source.Sender.Server == LID_SERVER:
            users.add(self._ledger.lids.get(bare_user(str(source.Sender.User)), ""))
        return self._owner is not None and self._owner in users

    async def _pump(self) -> None:
        while True:
            event = await self._events.get()
            try:
                await self._dispatch(event)
            except Exception:  # one bad event must not stop the channel
                log.exception("whatsapp: failed to handle %s", type(event).__name__)
            finally:
                self._events.task_done()
            # A turn for everyone else (the owner's /status being answered) between two
            # events: handing one over often completes without suspending, and a flood
            # would otherwise keep the loop to itself until the queue ran dry.
            await asyncio.sleep(0)

    async def _dispatch(self, event: Any) -> None:
        if isinstance(event, nz.MessageEv):
            await self._on_message(event)
        elif self._conn.handle(event):
            pass
        elif isinstance(event, nz.PairStatusEv) and self._conn.linking:
            self._paired_now(event)
        elif isinstance(event, nz.OfflineSyncCompletedEv):
            log.info("whatsapp: offline sync done (%d messages)", event.Count)
        elif isinstance(event, nz.UndecryptableMessageEv):
            log.warning(
                "whatsapp: could not decrypt message %s in %s (WhatsApp retries)",
                event.Info.ID,
                jid_str(event.Info.MessageSource.Chat),
            )
        else:  # receipts, pair status: nothing to do in a running Fetch
            log.debug("whatsapp: %s", type(event).__name__)

    async def _on_message(self, event: Any) -> None:
        self._health.inbound()  # any traffic proves the connection works
        message_id = str(event.Info.ID)
        source = event.Info.MessageSource
        if (
            source.IsFromMe
            and message_id not in self._ledger
            and self._pending.claim(text_of(event.Message))
        ):
            # Our own send echoing back before the send call returned its id.
            self._ledger.record_sent(message_id, jid_str(source.Chat))
            log.debug("whatsapp: %s is the echo of a send in flight", message_id)
            return
        ctx = NormalizeContext(
            self._owner,
            self._settings.max_media_bytes,
            self._client.own_users(),
            self._ledger.lids,
            self._max_audio_seconds,
        )
        decision = route(event, ctx, self._rules, self._ledger)
        if decision.message is None or not decision.deliver:
            self._quiet_log.info("whatsapp: %s not for Fetch: %s", message_id, decision.reason)
            return
        result = decision.message
        inbound = result.inbound
        if not self._gate.allows(inbound):
            # Before the download, the media file, the ledger, the LID table: nothing of
            # a sender who is not allowed is kept (the gateway would drop it anyway).
            self._quiet_log.info(
                "whatsapp: %s from non-allowed sender %s dropped", message_id, inbound.sender
            )
            return
        if (pair := lid_pair(source)) is not None:
            self._ledger.record_lid(*pair)
        if result.media is not None:
            inbound = await self._fetch_media(inbound, result.media)
        self._ledger.record_wrote(inbound.chat)
        self._remember(
            message_id,
            _Seen(source.Chat, source.Sender, participant(source, self._ledger.lids), inbound.text),
        )
        assert self._sink is not None
        await self._sink(inbound)
        await self._mark_read(message_id)

    async def _fetch_media(self, inbound: Inbound, ref: MediaRef) -> Inbound:
        def refused(reason: str) -> Inbound:
            if ref.kind == "audio":  # said by the ears ("🎙 Not heard: ..."), never stored
                gone = Attachment("audio", "", ref.mime, seconds=ref.seconds, refused=reason)
                return replace(inbound, attachments=(gone,))
            note = f"[{ref.label} not received: {reason}]"
            return replace(inbound, text=f"{inbound.text}\n{note}" if ref.captioned else note)

        try:
            async with asyncio.timeout(DOWNLOAD_TIMEOUT):
                data = await self._client.download(ref.message)
        except Exception as err:
            log.warning("whatsapp: download of %s failed: %s", inbound.message_id, err)
            return refused("the download failed")
        limit = self._settings.max_media_bytes
        if len(data) > limit:  # the declared size can lie
            return refused(
                f"{media.megabytes(len(data))} is over the {media.megabytes(limit)} limit"
            )
        folder = media.media_dir(self._sessions_root, inbound.key)
        path = await asyncio.to_thread(
            media.save, folder, inbound.message_id, ref.mime, ref.kind, data
        )
        kept = Attachment(
            ref.kind, str(path), ref.mime, name=ref.name, seconds=ref.seconds, size=len(data)
        )
        return replace(inbound, attachments=(kept,))

    def _remember(self, message_id: str, seen: _Seen) -> None:
        self._seen[message_id] = seen
        while len(self._seen) > SEEN_KEEP:
            self._seen.popitem(last=False)

    async def _mark_read(self, message_id: str) -> None:
        seen = self._seen.get(message_id)
        if seen is None:
            return
        try:
            await self._client.mark_read(message_id, seen.chat, seen.sender)
        except Exception as err:  # a missing blue tick is not worth failing over
            log.debug("whatsapp: mark_read %s failed: %s", message_id, err)

    # -- outbound --------------------------------------------------------------------

    async def send(self, message: Outbound) -> SendResult:
        if self._health.alert:
            raise WhatsAppUnavailable(f"WhatsApp is unavailable: {self._health.alert}")
        if not self._may_message(message.chat):
            error = RecipientNotAllowed(message.chat)
            log.warning("whatsapp: %s", error)
            raise error
        jid = parse_jid(message.chat)
        await self._pacer.acquire()
        if message.edit_of:
            sent = await self._edit(
                jid, message.chat, message.edit_of, message.text, message.reply_to
            )
        else:
            sent = await self._send_text(jid, message.chat, message.text, message.reply_to)
        return SendResult(message_id=sent)

    async def send_file(self, file: OutboundFile) -> SendResult:
        """An image as a picture, anything else as a document; reply-only and paced
        like every message."""
        if self._health.alert:
            raise WhatsAppUnavailable(f"WhatsApp is unavailable: {self._health.alert}")
        if not self._may_message(file.chat):
            raise RecipientNotAllowed(file.chat)
        await self._pacer.acquire()
        try:
            sent = await self._client.send_media(
                parse_jid(file.chat), file.data, file.kind, file.mime, file.name, file.caption
            )
        except Exception as err:
            raise SendFailed(f"WhatsApp file to {file.chat} failed: {err}") from err
        self._ledger.record_sent(sent, file.chat)
        self._health.outbound()
        return SendResult(message_id=sent)

    def _may_message(self, chat: str) -> bool:
        """A chat that wrote to Fetch, or the owner's own direct chat (their number)."""
        return chat == self._owner_dm or self._ledger.wrote(chat)

    async def _edit(
        self, jid: Any, chat: str, edit_of: str, text: str, reply_to: str | None
    ) -> str:
        if not self._ledger.sent_by_fetch(edit_of):
            log.info("whatsapp: %s is not Fetch's message; sending instead of editing", edit_of)
            return await self._send_text(jid, chat, text, reply_to)
        try:
            # An edit echoes as an edit, which normalize skips; its id is recorded below.
            edit_id = await self._client.edit_message(jid, edit_of, nz.Message(conversation=text))
        except Exception as err:  # too old to edit (15 min), or deleted: send it new
            log.info("whatsapp: edit of %s failed (%s); sending as a new message", edit_of, err)
            return await self._send_text(jid, chat, text, reply_to)
        self._ledger.record_sent(edit_id, chat)  # the edit is a message too, and may echo
        self._health.outbound()
        return edit_of  # the edited message keeps its id: later edits target it again

    async def _send_text(self, jid: Any, chat: str, text: str, reply_to: str | None) -> str:
        seen = self._seen.get(reply_to) if reply_to else None
        if seen is not None:
            quote = nz.ContextInfo(
                stanzaID=reply_to,
                participant=seen.participant,
                quotedMessage=nz.Message(conversation=seen.text),
            )
            payload = nz.Message(
                extendedTextMessage=nz.ExtendedTextMessage(text=text, contextInfo=quote)
            )
        else:
            payload = nz.Message(conversation=text)
        try:
            with self._pending.sending(text):  # registered before the call: see echo.py
                message_id = await self._client.send_message(jid, payload)
        except Exception as err:
            raise SendFailed(f"WhatsApp send to {chat} failed: {err}") from err
        self._ledger.record_sent(message_id, chat)
        self._health.outbound()
        return message_id

    async def set_typing(self, chat: str, typing: bool) -> None:
        # Presence is traffic too: only to chats that wrote, only while connected.
        if self._health.alert or not self._health.connected or not self._ledger.wrote(chat):
            return
        try:
            await self._client.send_chat_presence(parse_jid(chat), typing)
        except Exception as err:  # a typing indicator must never break a reply
            log.debug("whatsapp: typing indicator for %s failed: %s", chat, err)
