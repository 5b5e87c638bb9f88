"""Outbound: the one way replies leave Fetch. Routed to the channel they belong to,
recorded in SQLite and the session journal, rendered in the channel's markup and cut to
its size (the only place a reply is split: ``core.text.split_message``)."""

from __future__ import annotations

import logging
import textwrap
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from channels.base import Channel, FileSender
from core.errors import ChannelError, FetchError
from core.events import Outbound, OutboundFile, SendResult, SessionKey
from core.text import split_message
from orchestrator.store import Journal, Store

log = logging.getLogger(__name__)


PHONE_WIDTH = 60  # what a 6-inch screen shows without ugly wraps


def phone_wrap(text: str, width: int = PHONE_WIDTH) -> str:
    """Wrap prose lines at ``width``; code blocks are left alone (the diff view already
    cuts them). Bullets and indents keep their hanging indent."""
    out: list[str] = []
    in_code = False
    for line in text.split("\n"):
        if line.strip().startswith("```"):
            in_code = not in_code
            out.append(line)
            continue
        if in_code or len(line) <= width:
            out.append(line)
            continue
        stripped = line.lstrip()
        indent = line[: len(line) - len(stripped)]
        hang = indent + ("  " if stripped[:2] in {"• ", "- ", "* "} else "")
        out.extend(
            textwrap.wrap(
                line,
                width=width,
                subsequent_indent=hang,
                break_long_words=True,
                break_on_hyphens=False,
            )
        )
    return "\n".join(out)


class Messenger:
    def __init__(self, store: Store, journal: Journal) -> None:
        self._store = store
        self._journal = journal
        self._channels: dict[str, Channel] = {}
        # Recent ids of messages Fetch sent, per channel: a quote-reply to one of them is
        # addressed to Fetch even in a group without the trigger.
        self._sent: dict[str, OrderedDict[str, str]] = {}  # channel -> id -> chat
        self._routes: dict[SessionKey, SessionKey] = {}
        self._copies: dict[SessionKey, Callable[[str], None]] = {}
        # Channels that have started (App marks them): a notice to any other waits in
        # the durable outbox (``notify``).
        self._open: set[str] = set()
        # Last step of every destination: a linked pair's replies go to the chat the
        # owner last wrote from (orchestrator/links.py; set by the app).
        self.device: Callable[[SessionKey], SessionKey] | None = None

    def _to(self, key: SessionKey) -> SessionKey:
        """Where a message for session ``key`` goes: its route (a scheduled job's run
        reports to its chat), then the device of a linked pair."""
        key = self._routes.get(key, key)
        return self.device(key) if self.device is not None else key

    def record(self, key: SessionKey, role: str, text: str, **extra: Any) -> None:
        """A line in the chat's journal that is not a message (a tool call of the
        orchestrator, a harness's event): the dashboard's timeline. A full disk loses
        the line, never the work."""
        try:
            self._journal.append(key, role, text, **extra)
        except OSError as err:
            log.warning("journal: %s line for %s not recorded: %s", role, key, err)

    def add_channel(self, channel: Channel) -> None:
        if channel.name in self._channels:
            raise ValueError(f"channel {channel.name!r} registered twice")
        self._channels[channel.name] = channel

    def opened(self, name: str) -> None:
        """The channel has started: notices to it are sent, no longer only held."""
        self._open.add(name)

    def closed(self, name: str) -> None:
        self._open.discard(name)

    async def notify(self, key: SessionKey, text: str) -> None:
        """A notice that must not depend on its channel being up (what a crash left,
        told at start-up): sent now if the channel has started, else kept in the
        durable outbox and sent by ``deliver_held`` once it has. Never raises for a
        channel that is down: start-up does not stop for it."""
        to = self._to(key)
        if to.channel in self._open:
            try:
                await self.send(key, text)
                return
            except FetchError as err:
                log.warning("notice to %s held for later: %s", to, err)
        await self._store.outbox.hold(to, text)

    async def deliver_held(self) -> int:
        """Send the notices waiting for the channels that have started, oldest first;
        how many went. One a channel refuses waits for the next start (a few times)."""
        delivered = 0
        for name in sorted(self._open):
            for notice in await self._store.outbox.held(name):
                try:
                    await self.send(notice.key, notice.text)
                except FetchError as err:
                    log.warning("held notice to %s not sent: %s", notice.key, err)
                    await self._store.outbox.failed(notice.id)
                    continue
                await self._store.outbox.sent(notice.id)
                delivered += 1
        return delivered

    def route(
        self, session: SessionKey, deliver_to: SessionKey, copy: Callable[[str], None] | None = None
    ) -> None:
        """Replies of ``session`` go to ``deliver_to`` (a scheduled job runs in a fresh
        session of its own; its output belongs in the owner's chat). ``copy`` also gets
        each new message's text (the scheduler's push notifications)."""
        self._routes[session] = deliver_to
        if copy is not None:
            self._copies[session] = copy

    def routed_to(self, session: SessionKey) -> SessionKey | None:
        """Where ``session``'s replies go, if elsewhere (a scheduled job's run)."""
        return self._routes.get(session)

    def unroute(self, session: SessionKey) -> None:
        self._routes.pop(session, None)
        self._copies.pop(session, None)

    def sent_by_fetch(self, channel: str, message_id: str) -> bool:
        return message_id in self._sent.get(channel, {})

    def _elsewhere(self, message_id: str, key: SessionKey) -> bool:
        """A message Fetch sent to another chat than ``key``: a linked pair's other
        device (orchestrator/links.py). Unknown (before a restart): not elsewhere."""
        here = self._sent.get(key.channel)
        if here is not None and here.get(message_id) == key.chat:
            return False
        return any(ids.get(message_id) is not None for ids in self._sent.values())

    def _remember(self, channel: str, message_id: str, chat: str) -> None:
        if not message_id:
            return
        ids = self._sent.setdefault(channel, OrderedDict())
        ids[message_id] = chat
        if len(ids) > 2000:
            ids.popitem(last=False)

    async def typing(self, key: SessionKey, on: bool) -> None:
        """A typing indicator while Fetch works, where the channel has one; a failure to
        show it is never worth failing the work for."""
        key = self._to(key)
        channel = self._channels.get(key.channel)
        if channel is None or not channel.capabilities.typing:
            return
        try:
            await channel.set_typing(key.chat, on)
        except Exception as err:  # cosmetic: log and carry on
            log.info("typing indicator on %s failed: %s", key.channel, err)

    async def answered(self, key: SessionKey, nonce: str, answer: str) -> None:
        """A diff's approval closed (``answer``: yes or no), however it was answered:
        a channel that shows the diff with buttons (the web chat) turns them off."""
        channel = self._channels.get(key.channel)
        hook = getattr(channel, "diff_answered", None)
        if hook is None:
            return
        try:
            await hook(key.chat, nonce, answer)
        except Exception as err:  # cosmetic: the answer itself stands
            log.info("marking the answered diff on %s failed: %s", key.channel, err)

    def channels(self) -> list[Channel]:
        return list(self._channels.values())

    def channel(self, name: str) -> Channel:
        try:
            return self._channels[name]
        except KeyError:
            raise ChannelError(f"no channel named {name!r}") from None

    async def send(
        self,
        key: SessionKey,
        text: str,
        *,
        reply_to: str | None = None,
        tokens: tuple[int, int] = (0, 0),
        model: str | None = None,
        edit_of: str | None = None,
        approval_nonce: str | None = None,
    ) -> SendResult:
        """Send ``text`` to the chat of ``key``. ``edit_of`` replaces an earlier message in
        place where the channel can edit (progress), else it is sent as a new message."""
        log_key = key
        key = self._to(key)
        channel = self.channel(key.channel)
        caps = channel.capabilities
        if edit_of and self._elsewhere(edit_of, key):
            edit_of = None  # sent on the pair's other device: this one gets a new message
        if caps.markup != "json":
            text = phone_wrap(text)
        # Recorded before it is sent: whatever the owner can see is already in the log.
        self._store.messages.log(
            log_key, "out", text, model=model, tokens_in=tokens[0], tokens_out=tokens[1]
        )
        try:
            self._journal.append(
                log_key,
                "fetch",
                text,
                **({"model": model, "tokens": list(tokens)} if model else {}),
            )
        except OSError as err:  # a full disk must not silence Fetch: send it all the same
            log.warning("journal: reply to %s not recorded: %s", log_key, err)
        copy = self._copies.get(log_key)
        if copy is not None and edit_of is None:  # new messages only, not progress edits
            copy(text)
        parts = split_message(caps.render(text), caps.message_limit, caps.measure)
        if edit_of and caps.can_edit and len(parts) == 1:
            edited = await channel.send(Outbound(key.channel, key.chat, parts[0], edit_of=edit_of))
            self._remember(key.channel, edited.message_id, key.chat)
            return edited
        last = SendResult(message_id="")
        for i, part in enumerate(parts):
            nonce = approval_nonce if i == len(parts) - 1 else None  # buttons on the last
            quote = reply_to if i == 0 else None  # the first part quotes the question
            last = await channel.send(
                Outbound(key.channel, key.chat, part, reply_to=quote, approval_nonce=nonce)
            )
            self._remember(key.channel, last.message_id, key.chat)
        return last

    async def send_file(
        self, key: SessionKey, name: str, data: bytes, mime: str, *, caption: str = ""
    ) -> SendResult:
        """Send a file to the chat of ``key``: an image as a picture (where the channel
        shows one and it is within its image limit), anything else as a document.
        ``ChannelError`` with one clear line when the channel sends no files or the
        file is over its limit."""
        log_key = key
        key = self._to(key)
        channel = self.channel(key.channel)
        caps = channel.capabilities
        if not caps.file_limit or not isinstance(channel, FileSender):
            raise ChannelError(f"the {key.channel} channel cannot send files")
        image = mime in SHOWN_IMAGES and 0 < len(data) <= caps.image_limit
        if not image and len(data) > caps.file_limit:
            raise ChannelError(
                f"{name} is {_mb(len(data))}; {key.channel} takes files up to "
                f"{_mb(caps.file_limit)}"
            )
        line = f"📎 {name} ({_mb(len(data))})" + (f": {caption}" if caption else "")
        self._store.messages.log(log_key, "out", line)
        try:
            self._journal.append(log_key, "fetch", line)
        except OSError as err:
            log.warning("journal: file to %s not recorded: %s", log_key, err)
        kind = "image" if image else "document"
        sent = await channel.send_file(
            OutboundFile(key.channel, key.chat, name, data, mime, kind, caption)
        )
        self._remember(key.channel, sent.message_id, key.chat)
        return sent


# Pictures every channel shows inline; anything else (an SVG, a TIFF) goes as a document.
SHOWN_IMAGES = frozenset({"image/png", "image/jpeg", "image/webp", "image/gif"})


def _mb(size: int) -> str:
    return f"{size / (1024 * 1024):.1f} MB" if size >= 100_000 else f"{size / 1024:.0f} KB"
