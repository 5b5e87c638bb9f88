"""A fake Telegram Bot API: real HTTP on 127.0.0.1, the real wire format, scripted updates.

    async with FakeTelegramApi() as tg:
        settings = TelegramSettings(enabled=True, token=tg.token, owner_id="42",
                                    api_base=tg.url)
        tg.push_message("hello", chat_id=42, from_id=42)
        ...
        sent = await tg.wait_for("sendMessage")

``/bot<token>/<method>`` answers ``getUpdates`` (long poll, ``offset`` confirms like
Telegram: confirmed updates are gone for good), ``sendMessage``, ``editMessageText``,
``editMessageReplyMarkup``, ``answerCallbackQuery``, ``sendChatAction``, ``setWebhook``,
``deleteWebhook`` and ``getMe``. Every call, failed or not, lands in ``calls``.

It checks what Telegram checks and a lenient fake would let through: HTML must parse
with Telegram's tag set and balance, the text after parsing must fit 4096 UTF-16 units,
an edit to identical content is "message is not modified", an unknown message id cannot
be edited. ``fail_next(method, ...)`` makes the next call to ``method`` fail once (a 429
with ``retry_after`` by default); ``replay(update)`` re-sends an update once, ignoring
the offset, as a server that lost the confirmation would.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from html.parser import HTMLParser
from types import TracebackType
from typing import Any

from aiohttp import web

LIMIT = 4096
BARE_LT = re.compile(r"<(?![/a-zA-Z])")
BARE_AMP = re.compile(r"&(?!(?:lt|gt|amp|quot|#\d+|#x[0-9a-fA-F]+);)")
TAGS = {
    "b",
    "strong",
    "i",
    "em",
    "u",
    "ins",
    "s",
    "strike",
    "del",
    "a",
    "code",
    "pre",
    "span",
    "tg-spoiler",
    "tg-emoji",
    "blockquote",
}


@dataclass
class Call:
    method: str
    params: dict[str, Any]
    at: float  # loop.time() when the request arrived
    status: int = 200


@dataclass
class Message:
    chat_id: str
    message_id: int
    text: str  # as the phone shows it (entities parsed)
    raw: str  # as sent (HTML source when parse_mode is HTML)
    parse_mode: str | None
    reply_markup: dict[str, Any] | None
    reply_to: int | None
    edits: int = 0
    history: list[str] = field(default_factory=list)


@dataclass
class Upload:
    """A file a bot sent (sendDocument / sendPhoto), as the multipart form carried it."""

    method: str
    chat_id: str
    message_id: int
    filename: str
    content_type: str
    data: bytes
    caption: str


class _TelegramHtml(HTMLParser):
    """Parses like Telegram: known tags only, balanced, entities decoded."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.text: list[str] = []
        self.stack: list[str] = []
        self.problem: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag not in TAGS:
            self.problem = self.problem or f'unsupported start tag "{tag}"'
        self.stack.append(tag)

    def handle_endtag(self, tag: str) -> None:
        if not self.stack or self.stack[-1] != tag:
            self.problem = self.problem or f'can\'t find end tag corresponding to "{tag}"'
            return
        self.stack.pop()

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def parse_html(source: str) -> tuple[str, str | None]:
    """(visible text, problem or None)."""
    parser = _TelegramHtml()
    parser.feed(source)
    parser.close()
    problem = parser.problem
    if problem is None and parser.stack:
        problem = f'unclosed tag "{parser.stack[-1]}"'
    # A bare "<" or "&" that is not a tag or entity: Telegram refuses; HTMLParser keeps it.
    if problem is None and BARE_LT.search(source):
        problem = "unexpected < (escape it as &lt;)"
    if problem is None and BARE_AMP.search(source):
        problem = "unexpected & (escape it as &amp;)"
    return "".join(parser.text), problem


def units(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


class _Fail(Exception):
    def __init__(self, code: int, description: str, retry_after: int | None = None) -> None:
        super().__init__(description)
        self.code, self.description, self.retry_after = code, description, retry_after


class FakeTelegramApi:
    def __init__(self, token: str = "123456:TEST-token") -> None:
        self.token = token
        self.url = ""
        self.calls: list[Call] = []
        self.messages: dict[tuple[str, int], Message] = {}
        self.webhook: dict[str, Any] | None = None
        self._pending: list[dict[str, Any]] = []
        self._replays: list[dict[str, Any]] = []
        self._failures: dict[str, list[_Fail]] = {}
        self._next_update = 5000
        self._next_message: dict[str, int] = {}
        self._next_callback = 0
        self._changed: asyncio.Condition | None = None
        self._closing = False
        self._runner: web.AppRunner | None = None
        # Files a message may carry: file_id -> (file_path, bytes); served by getFile and
        # GET /file/bot<token>/<file_path>, as the Bot API does.
        self.files: dict[str, tuple[str, bytes]] = {}
        self.downloads: list[str] = []  # file paths fetched, in order
        self.uploads: list[Upload] = []  # files the bot sent, in order

    # -- lifecycle -------------------------------------------------------------------

    async def start(self) -> None:
        self._changed = asyncio.Condition()
        app = web.Application(client_max_size=64 * 1024 * 1024)  # uploads, as the API
        app.router.add_post("/bot{token}/{method}", self._handle)
        app.router.add_get("/bot{token}/{method}", self._handle)
        app.router.add_get("/file/bot{token}/{path:.+}", self._file)
        runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.5)
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", 0).start()
        self._runner = runner
        port = next(a[1] for a in runner.addresses if isinstance(a, tuple))
        self.url = f"http://127.0.0.1:{port}"

    async def stop(self) -> None:
        self._closing = True
        await self._notify()
        runner, self._runner = self._runner, None
        if runner is not None:
            await runner.cleanup()

    async def __aenter__(self) -> FakeTelegramApi:
        await self.start()
        return self

    async def __aexit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.stop()

    # -- scripting -------------------------------------------------------------------

    def push_update(self, update: dict[str, Any]) -> dict[str, Any]:
        """Queue an update (an ``update_id`` is assigned when absent); returns it."""
        if "update_id" not in update:
            self._next_update += 1
            update = {"update_id": self._next_update, **update}
        self._pending.append(update)
        self._notify_soon()
        return update

    def push_message(
        self,
        text: str,
        *,
        chat_id: int = 42,
        from_id: int = 42,
        chat_type: str = "private",
        reply_to: int | None = None,
        message_id: int | None = None,
    ) -> dict[str, Any]:
        mid = message_id if message_id is not None else self._new_message_id(str(chat_id))
        message: dict[str, Any] = {
            "message_id": mid,
            "date": int(time.time()),
            "text": text,
            "chat": {"id": chat_id, "type": chat_type},
            "from": {"id": from_id, "is_bot": False, "first_name": "Owner"},
        }
        if reply_to is not None:
            message["reply_to_message"] = {
                "message_id": reply_to,
                "date": 0,
                "chat": {"id": chat_id, "type": chat_type},
            }
        return self.push_update({"message": message})

    def push_callback(
        self,
        data: str,
        *,
        chat_id: int | str,
        message_id: int,
        from_id: int = 42,
        chat_type: str = "private",
    ) -> dict[str, Any]:
        """A tap on an inline button of message ``message_id``."""
        self._next_callback += 1
        return self.push_update(
            {
                "callback_query": {
                    "id": f"cbq{self._next_callback}",
                    "data": data,
                    "chat_instance": "1",
                    "from": {"id": from_id, "is_bot": False, "first_name": "Owner"},
                    "message": {
                        "message_id": message_id,
                        "date": int(time.time()),
                        "chat": {"id": int(chat_id), "type": chat_type},
                        "text": "…",
                    },
                }
            }
        )

    def add_file(self, data: bytes, suffix: str = "") -> str:
        """Keep ``data`` as a file a message can carry; returns its file_id."""
        file_id = f"FILE{len(self.files) + 1:04d}"
        self.files[file_id] = (f"documents/file_{len(self.files) + 1}{suffix}", data)
        return file_id

    def push_media(
        self,
        field_name: str,
        media: Any,
        *,
        caption: str | None = None,
        chat_id: int = 42,
        from_id: int = 42,
    ) -> dict[str, Any]:
        """A message carrying ``media`` under ``field_name`` (voice, audio, photo,
        document), in the Bot API's shape: no ``text``, maybe a ``caption``."""
        message: dict[str, Any] = {
            "message_id": self._new_message_id(str(chat_id)),
            "date": int(time.time()),
            "chat": {"id": chat_id, "type": "private"},
            "from": {"id": from_id, "is_bot": False, "first_name": "Owner"},
            field_name: media,
        }
        if caption is not None:
            message["caption"] = caption
        return self.push_update({"message": message})

    def push_voice(
        self, data: bytes, *, duration: int = 4, chat_id: int = 42, from_id: int = 42
    ) -> dict[str, Any]:
        file_id = self.add_file(data, ".oga")
        voice = {
            "file_id": file_id,
            "file_unique_id": f"u{file_id}",
            "duration": duration,
            "mime_type": "audio/ogg",
            "file_size": len(data),
        }
        return self.push_media("voice", voice, chat_id=chat_id, from_id=from_id)

    def replay(self, update: dict[str, Any]) -> None:
        self._replays.append(update)
        self._notify_soon()

    def fail_next(
        self,
        method: str,
        *,
        code: int = 429,
        retry_after: int | None = 1,
        description: str | None = None,
    ) -> None:
        if description is None:
            description = (
                f"Too Many Requests: retry after {retry_after}"
                if code == 429
                else "Internal Server Error"
            )
        self._failures.setdefault(method, []).append(
            _Fail(code, description, retry_after if code == 429 else None)
        )

    def calls_to(self, method: str) -> list[Call]:
        return [c for c in self.calls if c.method == method]

    def sent(self, chat_id: int | str | None = None) -> list[Message]:
        """Messages in the order they were sent (edits update them in place)."""
        return [m for m in self.messages.values() if chat_id is None or m.chat_id == str(chat_id)]

    async def wait_for(
        self,
        method: str,
        count: int = 1,
        timeout: float = 10,
        where: Callable[[Call], bool] = lambda c: c.status == 200,
    ) -> list[Call]:
        """Wait until ``count`` calls to ``method`` matched ``where``; returns them."""
        async with asyncio.timeout(timeout):
            while True:
                found = [c for c in self.calls_to(method) if where(c)]
                if len(found) >= count:
                    return found
                await asyncio.sleep(0.01)

    async def wait_for_text(self, needle: str, timeout: float = 30) -> Message:
        async with asyncio.timeout(timeout):
            while True:
                for m in self.messages.values():
                    if needle in m.text:
                        return m
                await asyncio.sleep(0.02)

    # -- the API ---------------------------------------------------------------------

    def _new_message_id(self, chat: str) -> int:
        self._next_message[chat] = self._next_message.get(chat, 0) + 1
        return self._next_message[chat]

    def _notify_soon(self) -> None:
        with contextlib.suppress(RuntimeError):  # no running loop: nobody is waiting
            asyncio.get_running_loop().create_task(self._notify())

    async def _notify(self) -> None:
        if self._changed is not None:
            async with self._changed:
                self._changed.notify_all()

    async def _handle(self, request: web.Request) -> web.Response:
        loop = asyncio.get_running_loop()
        params: dict[str, Any] = dict(request.query)
        if request.can_read_body:
            if request.content_type == "application/json":
                body = await request.json()
                params.update(body if isinstance(body, dict) else {})
            else:
                params.update(await request.post())
        method = request.match_info["method"]
        call = Call(method, params, loop.time())
        self.calls.append(call)
        try:
            if request.match_info["token"] != self.token:
                raise _Fail(401, "Unauthorized")
            queued = self._failures.get(method)
            if queued:
                raise queued.pop(0)
            handler = getattr(self, f"_api_{method}", None)
            if handler is None:
                raise _Fail(404, "Not Found")
            result = await handler(params)
        except _Fail as fail:
            call.status = fail.code
            answer: dict[str, Any] = {
                "ok": False,
                "error_code": fail.code,
                "description": fail.description,
            }
            if fail.retry_after is not None:
                answer["parameters"] = {"retry_after": fail.retry_after}
            return web.json_response(answer, status=fail.code)
        return web.json_response({"ok": True, "result": result})

    async def _api_getMe(self, params: dict[str, Any]) -> Any:
        return {"id": 123456, "is_bot": True, "first_name": "Fetch", "username": "fetch_bot"}

    async def _api_getUpdates(self, params: dict[str, Any]) -> Any:
        if self.webhook is not None:
            raise _Fail(
                409,
                "Conflict: can't use getUpdates method while webhook is active;"
                " use deleteWebhook to delete the webhook first",
            )
        offset = int(params.get("offset") or 0)
        timeout = float(params.get("timeout") or 0)
        limit = int(params.get("limit") or 100)
        # Confirmation, as Telegram does it: below the offset is gone for good.
        self._pending = [u for u in self._pending if u["update_id"] >= offset]
        assert self._changed is not None
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        async with self._changed:
            while not (self._pending or self._replays) and not self._closing:
                left = deadline - loop.time()
                if left <= 0:
                    break
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._changed.wait(), left)
        batch, self._replays = self._replays + self._pending, []
        return batch[:limit]

    def _message(self, params: dict[str, Any]) -> Message:
        key = (str(params.get("chat_id")), int(params.get("message_id") or 0))
        found = self.messages.get(key)
        if found is None:
            raise _Fail(400, "Bad Request: message to edit not found")
        return found

    @staticmethod
    def _render(params: dict[str, Any]) -> tuple[str, str]:
        raw = params.get("text")
        if not isinstance(raw, str) or not raw.strip():
            raise _Fail(400, "Bad Request: message text is empty")
        visible = raw
        if params.get("parse_mode") == "HTML":
            visible, problem = parse_html(raw)
            if problem:
                raise _Fail(400, f"Bad Request: can't parse entities: {problem}")
        if units(visible) > LIMIT:
            raise _Fail(400, "Bad Request: message is too long")
        return raw, visible

    @staticmethod
    def _as_result(m: Message) -> dict[str, Any]:
        result: dict[str, Any] = {
            "message_id": m.message_id,
            "date": int(time.time()),
            "chat": {"id": int(m.chat_id), "type": "private"},
            "text": m.text,
        }
        if m.reply_markup:
            result["reply_markup"] = m.reply_markup
        return result

    async def _api_sendMessage(self, params: dict[str, Any]) -> Any:
        chat = str(params.get("chat_id") or "")
        if not chat:
            raise _Fail(400, "Bad Request: chat_id is empty")
        raw, visible = self._render(params)
        reply = params.get("reply_parameters")
        m = Message(
            chat,
            self._new_message_id(chat),
            visible,
            raw,
            params.get("parse_mode"),
            params.get("reply_markup"),
            reply.get("message_id") if isinstance(reply, dict) else None,
        )
        self.messages[(chat, m.message_id)] = m
        return self._as_result(m)

    async def _api_editMessageText(self, params: dict[str, Any]) -> Any:
        m = self._message(params)
        raw, visible = self._render(params)
        markup = params.get("reply_markup")
        if raw == m.raw and markup == m.reply_markup:
            raise _Fail(
                400,
                "Bad Request: message is not modified: specified new message "
                "content and reply markup are exactly the same",
            )
        m.history.append(m.text)
        m.text, m.raw, m.reply_markup, m.edits = visible, raw, markup, m.edits + 1
        return self._as_result(m)

    async def _api_editMessageReplyMarkup(self, params: dict[str, Any]) -> Any:
        m = self._message(params)
        markup = params.get("reply_markup")
        m.reply_markup = markup if markup and markup.get("inline_keyboard") else None
        return self._as_result(m)

    async def _api_answerCallbackQuery(self, params: dict[str, Any]) -> Any:
        if not params.get("callback_query_id"):
            raise _Fail(400, "Bad Request: query is too old or query ID is invalid")
        return True

    async def _api_sendChatAction(self, params: dict[str, Any]) -> Any:
        if params.get("action") not in {"typing", "upload_photo", "upload_document"}:
            raise _Fail(400, "Bad Request: wrong parameter action in request")
        return True

    async def _api_setWebhook(self, params: dict[str, Any]) -> Any:
        if not params.get("url"):
            raise _Fail(400, "Bad Request: bad webhook: an HTTPS URL must be provided")
        self.webhook = dict(params)
        return True

    async def _api_getFile(self, params: dict[str, Any]) -> Any:
        found = self.files.get(str(params.get("file_id") or ""))
        if found is None:
            raise _Fail(400, "Bad Request: invalid file_id")
        path, data = found
        return {"file_id": params["file_id"], "file_size": len(data), "file_path": path}

    async def _file(self, request: web.Request) -> web.Response:
        if request.match_info["token"] != self.token:
            return web.Response(status=401)
        path = request.match_info["path"]
        self.downloads.append(path)
        for known, data in self.files.values():
            if known == path:
                return web.Response(body=data, content_type="application/octet-stream")
        return web.Response(status=404)

    async def _upload(self, method: str, field_name: str, params: dict[str, Any]) -> Any:
        chat = str(params.get("chat_id") or "")
        part = params.get(field_name)
        if not chat or not isinstance(part, web.FileField):
            raise _Fail(400, f"Bad Request: there is no {field_name} in the request")
        data = part.file.read()
        limit = 10 * 1024 * 1024 if field_name == "photo" else 50 * 1024 * 1024
        if len(data) > limit:
            raise _Fail(413, "Request Entity Too Large")
        mid = self._new_message_id(chat)
        caption = str(params.get("caption") or "")
        self.uploads.append(
            Upload(method, chat, mid, part.filename, part.content_type, data, caption)
        )
        return {"message_id": mid, "date": int(time.time()), "chat": {"id": int(chat)}}

    async def _api_sendDocument(self, params: dict[str, Any]) -> Any:
        return await self._upload("sendDocument", "document", params)

    async def _api_sendPhoto(self, params: dict[str, Any]) -> Any:
        return await self._upload("sendPhoto", "photo", params)

    async def _api_deleteWebhook(self, params: dict[str, Any]) -> Any:
        self.webhook = None
        return True
