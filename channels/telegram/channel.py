"""The Telegram channel: Bot API over aiohttp, by long polling or by webhook.

Polling (the default) needs nothing but the token and works behind NAT. Webhook mode
registers ``public_url`` (the https address at which your reverse proxy reaches
``webhook_path`` on the shared ``HttpServer``) with ``setWebhook`` and the secret token;
a request without the exact secret in ``X-Telegram-Bot-Api-Secret-Token`` gets 401.
Stopping never deletes the webhook: Telegram keeps what arrives meanwhile and delivers
it when Fetch is back.

Every update is put to the gate (``core.gate``) before anything is done for its sender:
a stranger's message or button tap gets no toast, no typing, no delivery. Within a
polled batch the owner's updates are handed over first.

Replies arrive cut to Telegram's size (``Capabilities.measure`` counts UTF-16 code
units, as Telegram does) and are sent as Telegram HTML (see ``format``); a message
carrying an approval nonce gets 👍/👎 buttons whose tap comes back as a yes/no reaction
to that message. The poller (or webhook registration) and the typing indicators are
tasks of the application's supervisor (``start``'s spawner); ``stop`` ends them.
"""

from __future__ import annotations

import asyncio
import hmac
import logging
import re
import time
from collections.abc import Callable
from contextlib import suppress
from dataclasses import replace
from pathlib import Path
from typing import Any

from aiohttp import web

from channels import media as accepted
from channels.base import Capabilities, InboundSink
from channels.http import HttpServer
from channels.telegram.api import BotApi, TelegramApiError
from channels.telegram.format import LIMIT, approval_keyboard, to_html
from channels.telegram.updates import (
    DOWNLOAD_LIMIT,
    SeenUpdates,
    TgMedia,
    from_owner,
    gate_probe,
    media_of,
    message_ref,
    parse_ref,
    to_inbound,
    with_media,
)
from channels.telegram_settings import TelegramSettings
from core.errors import ConfigError, SendFailed
from core.events import Inbound, Outbound, OutboundFile, SendResult
from core.gate import Gate, OwnerOnlyGate
from core.tasks import Spawner, cancel_and_wait
from core.text import utf16_units
from core.throttle import LogThrottle

log = logging.getLogger(__name__)

SECRET_HEADER = "X-Telegram-Bot-Api-Secret-Token"
ALLOWED_UPDATES = ["message", "callback_query"]
_SECRET_CHARS = re.compile(r"^[A-Za-z0-9_-]{1,256}$")  # what setWebhook accepts


class Backoff:
    """1, 2, 4 ... ``ceiling`` seconds between failed attempts; reset on success."""

    def __init__(self, first: float = 1.0, ceiling: float = 60.0) -> None:
        self._first, self._ceiling, self._next = first, ceiling, first

    def next(self) -> float:
        delay, self._next = self._next, min(self._next * 2, self._ceiling)
        return delay

    def reset(self) -> None:
        self._next = self._first


def _chat_id(chat: str) -> int | str:
    return int(chat) if chat.lstrip("-").isdigit() else chat


class TelegramChannel:
    name = "telegram"
    # markup: the core writes Markdown (``` fences, `code`); this adapter renders it.
    capabilities = Capabilities(
        message_limit=LIMIT,
        measure=utf16_units,
        can_edit=True,
        markup="markdown",
        can_react=True,
        typing=True,
        # The Bot API's upload limits: 50 MB a document, 10 MB a photo.
        file_limit=50 * 1024 * 1024,
        image_limit=10 * 1024 * 1024,
    )

    def __init__(
        self,
        settings: TelegramSettings,
        *,
        http: HttpServer | None = None,
        public_url: str | None = None,
        webhook_path: str = "/telegram/webhook",
        poll_timeout: int = 25,
        typing_every: float = 4.5,
        typing_max: float = 600.0,
        backoff: Backoff | None = None,
        clock: Callable[[], float] = time.time,
        gate: Gate | None = None,
        home: Path | None = None,
        max_audio_seconds: int = 0,
    ) -> None:
        if not settings.token:
            raise ConfigError("telegram.token", "", "the bot token from @BotFather")
        self._owner = settings.owner_id
        # Where a file the owner (or a member) sent is kept: FETCH_HOME/sessions/<chat>/media.
        # No home: files are refused with a line (nothing to keep them in).
        self._sessions_root = home / "sessions" if home is not None else None
        self._max_audio_seconds = max_audio_seconds  # transcription.max_seconds
        # The gateway's own question, asked before anything is done for a sender: a
        # stranger gets no toast, no typing, no delivery (and the log says so, sparingly).
        self._gate: Gate = gate or OwnerOnlyGate()
        self._quiet_log = LogThrottle(log)
        self._mode = settings.mode
        self._public_url = public_url
        self._secret = settings.webhook_secret or ""
        if self._mode == "webhook":
            if http is None or not public_url:
                raise ConfigError(
                    "telegram.mode",
                    "webhook",
                    "the HTTP listener and a public https URL for Telegram",
                )
            if not _SECRET_CHARS.match(self._secret):
                raise ConfigError(
                    "telegram.webhook_secret",
                    "",
                    "1-256 characters of A-Z a-z 0-9 _ - (required in webhook "
                    "mode: it is how Fetch knows a request came from Telegram)",
                )
            http.add_route("POST", webhook_path, self._on_webhook)
        self._api = BotApi(settings.token, settings.api_base)
        self._poll_timeout = poll_timeout
        self._typing_every = typing_every
        self._typing_max = typing_max
        self._backoff = backoff or Backoff()
        self._clock = clock
        self._seen = SeenUpdates()
        self._offset = 0
        self._sink: InboundSink | None = None
        self._spawner: Spawner | None = None
        self._task: asyncio.Task[Any] | None = None
        self._typing: dict[str, asyncio.Task[Any]] = {}
        self._problem: str | None = None
        self._ready = False  # polling started / webhook registered
        self._last_update: float | None = None

    # -- lifecycle -------------------------------------------------------------------

    async def start(self, sink: InboundSink, spawner: Spawner) -> None:
        if self._sink is not None:
            raise RuntimeError("telegram channel already started")
        await self._api.open()
        self._sink, self._spawner = sink, spawner
        # Network work happens in the background task: Telegram being unreachable at
        # boot must not keep the rest of Fetch (terminal, webhook) from starting.
        body = self._poll() if self._mode == "polling" else self._register_webhook()
        self._task = spawner.spawn(body, name=f"channel:telegram:{self._mode}")
        self._task.add_done_callback(self._task_done)

    def _task_done(self, task: asyncio.Task[Any]) -> None:
        # Both loops retry every API error; anything else is a bug (the supervisor logs
        # its traceback), and health() must not keep claiming all is well.
        if not task.cancelled() and task.exception() is not None:
            self._problem, self._ready = f"stopped by {task.exception()!r}", False

    async def stop(self) -> None:
        # The poller goes first: nothing it takes from here on could reach the gateway,
        # and it must not move the offset past an update it did not hand over.
        task, self._task = self._task, None
        await cancel_and_wait(task)
        self._sink = None  # webhook requests from here on get 503, Telegram retries later
        for chat in list(self._typing):
            await self._stop_typing(chat)
        if self._mode == "polling" and self._offset:
            # Confirm what was handed over, so a restart does not fetch it again (the
            # gateway would drop it anyway; this just saves the round trip).
            with suppress(TelegramApiError):
                await self._api.call(
                    "getUpdates",
                    {"offset": self._offset, "timeout": 0, "limit": 1},
                    request_seconds=5,
                )
        await self._api.close()
        self._ready = False
        self._spawner = None

    def health(self) -> str:
        if self._task is None:
            return "telegram: stopped"
        state = "polling" if self._mode == "polling" else "webhook"
        if self._problem and not self._ready:
            return f"telegram: {state} not ready: {self._problem}"
        if self._problem:
            return f"telegram: {state}, last error: {self._problem}"
        if self._last_update is None:
            return f"telegram: {state}, no updates yet"
        ago = int(self._clock() - self._last_update)
        return f"telegram: {state}, last update {ago}s ago"

    # -- inbound ---------------------------------------------------------------------

    async def _poll(self) -> None:
        # getUpdates refuses to work while a webhook is set (409): clear any old one.
        await self._until_ok("deleteWebhook", {"drop_pending_updates": False})
        self._ready = True
        while True:
            params = {
                "offset": self._offset,
                "timeout": self._poll_timeout,
                "allowed_updates": ALLOWED_UPDATES,
            }
            try:
                batch = await self._api.call(
                    "getUpdates", params, request_seconds=self._poll_timeout + 15
                )
                if not isinstance(batch, list):
                    raise TelegramApiError("getUpdates", "result is not a list")
            except TelegramApiError as err:
                await self._failed(err)
                continue
            self._backoff.reset()
            self._problem = None
            await self._handle_batch([u for u in batch if isinstance(u, dict)])

    async def _handle_batch(self, batch: list[dict[str, Any]]) -> None:
        """The owner's updates first, then everyone else's, each group in order: a
        member's flood in the same batch must not hold up the owner's /stop.

        The offset confirms everything below it, so it only ever moves to the lowest
        update of the batch not yet handed over: a stop mid-batch skips nothing. What
        was handed over above that point (the owner's, out of order) comes again after
        a restart, and the gateway's persistent dedupe drops it."""
        ids = [u["update_id"] for u in batch if isinstance(u.get("update_id"), int)]
        pending = set(ids)
        ordered = sorted(batch, key=lambda u: not from_owner(u, self._owner))  # stable
        for update in ordered:
            await self._handle_update(update)
            update_id = update.get("update_id")
            if isinstance(update_id, int):
                pending.discard(update_id)
                self._offset = min(pending) if pending else max(ids) + 1

    async def _register_webhook(self) -> None:
        await self._until_ok(
            "setWebhook",
            {
                "url": self._public_url,
                "secret_token": self._secret,
                "allowed_updates": ALLOWED_UPDATES,
                "drop_pending_updates": False,
            },
        )
        self._ready = True
        self._problem = None

    async def _until_ok(self, method: str, params: dict[str, Any]) -> Any:
        while True:
            try:
                result = await self._api.call(method, params)
            except TelegramApiError as err:
                await self._failed(err)
                continue
            self._backoff.reset()
            return result

    async def _failed(self, err: TelegramApiError) -> None:
        self._problem = str(err)
        delay = self._backoff.next()
        log.warning("%s; retrying in %.0fs", err, delay)
        await asyncio.sleep(delay)

    async def _on_webhook(self, request: web.Request) -> web.StreamResponse:
        got = request.headers.get(SECRET_HEADER, "")
        if not hmac.compare_digest(got.encode(), self._secret.encode()):
            return web.json_response({"ok": False, "error": "bad secret token"}, status=401)
        if self._sink is None:
            return web.json_response({"ok": False, "error": "not running"}, status=503)
        try:
            update = await request.json()
        except ValueError:
            return web.json_response({"ok": False, "error": "body is not JSON"}, status=400)
        if not isinstance(update, dict):
            return web.json_response({"ok": False, "error": "body is not an update"}, status=400)
        await self._handle_update(update)
        self._ready, self._problem = True, None
        return web.json_response({"ok": True})

    async def _handle_update(self, update: dict[str, Any]) -> None:
        update_id = update.get("update_id")
        if not isinstance(update_id, int) or not self._seen.first_time(update_id):
            log.debug("telegram update %r skipped (duplicate or no id)", update_id)
            return
        self._last_update = self._clock()
        try:
            inbound = to_inbound(update, self._owner, self._clock())
            who = inbound or gate_probe(update, self._owner, self._clock())
            if who is not None and not self._gate.allows(who):
                self._quiet_log.info(
                    "telegram: update %s from non-allowed sender %s dropped", update_id, who.sender
                )
                return
            query = update.get("callback_query")
            if isinstance(query, dict) and who is not None:
                await self._answer_button(query, inbound)
            message = update.get("message")
            limit = self._max_audio_seconds
            found = media_of(message, limit) if isinstance(message, dict) else None
            if inbound is not None and found is not None:
                inbound = await self._fetch_media(inbound, found)  # after the gate, only
            if inbound is not None and self._sink is not None:
                await self._sink(inbound)
        except Exception:  # one bad update (or a failing gateway) must not stop the channel
            log.exception("telegram: update %s could not be handled", update_id)

    async def _fetch_media(self, inbound: Inbound, found: TgMedia) -> Inbound:
        if found.refused:
            return with_media(inbound, found)
        if self._sessions_root is None:
            return with_media(inbound, found, why="files cannot be kept (no home folder)")
        try:
            data = await self._api.download(found.file_id, DOWNLOAD_LIMIT)
        except TelegramApiError as err:
            log.warning("telegram: download of %s failed: %s", inbound.message_id, err)
            return with_media(inbound, found, why="the download failed")
        folder = accepted.media_dir(self._sessions_root, inbound.key)
        path = await asyncio.to_thread(
            accepted.save, folder, inbound.message_id, found.mime, found.kind, data
        )
        return with_media(inbound, replace(found, size=len(data)), str(path))

    async def _answer_button(self, query: dict[str, Any], inbound: Inbound | None) -> None:
        # Until answered, Telegram shows a spinner on the button.
        note = f"Got it: {inbound.text}" if inbound is not None else "That button is not active"
        await self._quiet(
            "answerCallbackQuery", {"callback_query_id": query.get("id"), "text": note}
        )
        target = parse_ref(inbound.reply_to) if inbound and inbound.reply_to else None
        if inbound is not None and inbound.from_owner and target is not None:
            # Answered once: the buttons go, so a second tap cannot answer a later diff.
            await self._quiet(
                "editMessageReplyMarkup",
                {
                    "chat_id": _chat_id(target[0]),
                    "message_id": target[1],
                    "reply_markup": {"inline_keyboard": []},
                },
            )

    async def _quiet(self, method: str, params: dict[str, Any]) -> None:
        """A call whose failure costs only cosmetics: logged, never raised."""
        try:
            await self._api.call(method, params, request_seconds=10)
        except TelegramApiError as err:
            log.warning("%s", err)

    # -- outbound --------------------------------------------------------------------

    async def send(self, message: Outbound) -> SendResult:
        if self._task is None:
            raise SendFailed("telegram channel is not started")
        params: dict[str, Any] = {
            "chat_id": _chat_id(message.chat),
            "text": to_html(message.text),
            "parse_mode": "HTML",
            "link_preview_options": {"is_disabled": True},
        }
        if message.approval_nonce:
            # The messenger puts the nonce on a reply's last message: its id is what send
            # returns, so it is the message approvals compare a tap's reply_to with. Only
            # diffs carry a nonce; a "more" page also ends in "Apply? (yes/no)" but a tap
            # there would answer a message approvals do not know, so pages get no buttons.
            params["reply_markup"] = approval_keyboard(message.approval_nonce)
        try:
            sent = await self._edit(message, params)
            if sent is None:
                self._reply_params(message, params)
                sent = await self._send_one(params, message.text)
        except TelegramApiError as err:
            raise SendFailed(str(err)) from err
        return SendResult(message_id=message_ref(message.chat, sent))

    async def send_file(self, file: OutboundFile) -> SendResult:
        if self._task is None:
            raise SendFailed("telegram channel is not started")
        image = file.kind == "image"
        method, field = ("sendPhoto", "photo") if image else ("sendDocument", "document")
        params: dict[str, Any] = {"chat_id": str(file.chat)}
        if file.caption:
            params["caption"] = file.caption[:1024]  # Telegram's caption limit
        try:
            result = await self._api.upload(method, params, field, file.name, file.data, file.mime)
        except TelegramApiError as err:
            raise SendFailed(str(err)) from err
        return SendResult(message_id=message_ref(file.chat, self._message_id(result, method)))

    def _reply_params(self, message: Outbound, params: dict[str, Any]) -> None:
        target = parse_ref(message.reply_to) if message.reply_to else None
        if target is not None and target[0] == message.chat:
            params["reply_parameters"] = {
                "message_id": target[1],
                "allow_sending_without_reply": True,
            }

    async def _send_one(self, params: dict[str, Any], source: str) -> int:
        try:
            result = await self._api.call("sendMessage", params)
        except TelegramApiError as err:
            if err.code != 400 or "parse entities" not in err.description:
                raise
            # A safety net, not the plan: to_html only emits balanced tags, but if
            # Telegram ever disagrees, the owner still gets the words.
            log.warning("telegram refused the HTML (%s); sending plain text", err.description)
            plain = {k: v for k, v in params.items() if k != "parse_mode"}
            result = await self._api.call("sendMessage", {**plain, "text": source})
        return self._message_id(result, "sendMessage")

    async def _edit(self, message: Outbound, params: dict[str, Any]) -> int | None:
        """Edit ``message.edit_of`` in place; None means "send a new message instead"."""
        target = parse_ref(message.edit_of) if message.edit_of else None
        if target is None or target[0] != message.chat:
            return None
        try:
            result = await self._api.call("editMessageText", {**params, "message_id": target[1]})
        except TelegramApiError as err:
            if "message is not modified" in err.description:
                return target[1]  # the same text again: already what the owner sees
            if err.code == 400:
                # Too old, deleted, or not ours to edit: the words still have to arrive.
                log.info(
                    "telegram: cannot edit %s (%s); sending anew", message.edit_of, err.description
                )
                return None
            raise
        return target[1] if result is True else self._message_id(result, "editMessageText")

    @staticmethod
    def _message_id(result: Any, method: str) -> int:
        if isinstance(result, dict) and isinstance(result.get("message_id"), int):
            return int(result["message_id"])
        raise TelegramApiError(method, "answer carries no message_id")

    # -- typing ----------------------------------------------------------------------

    async def set_typing(self, chat: str, typing: bool) -> None:
        await self._stop_typing(chat)
        if typing and self._task is not None and self._spawner is not None:
            self._typing[chat] = self._spawner.spawn(
                self._keep_typing(chat), name=f"channel:telegram:typing:{chat}"
            )

    async def _stop_typing(self, chat: str) -> None:
        await cancel_and_wait(self._typing.pop(chat, None))

    async def _keep_typing(self, chat: str) -> None:
        # Telegram shows "typing…" for 5 s per call: repeat until cleared, but never
        # forever if whoever set it forgets to clear it.
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self._typing_max
        try:
            while loop.time() < deadline:
                await self._quiet("sendChatAction", {"chat_id": _chat_id(chat), "action": "typing"})
                await asyncio.sleep(self._typing_every)
        finally:
            if self._typing.get(chat) is asyncio.current_task():
                del self._typing[chat]
