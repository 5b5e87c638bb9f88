"""The web chat: the owner talks to Fetch from a browser page on the one HTTP listener.

Routes (all behind ``WebAuth``: only the web token's holder reaches them, so whatever
arrives here is the owner's, by construction)::

    GET  /chat                 the page (server-rendered history, a form, chat.js)
    POST /chat/send            {"text": "...", "id": "<client id>"} (JSON) or a form
                               (text, csrf); a diff's buttons add "nonce" and "reply_to"
    GET  /chat/events          the replies as Server-Sent Events (``Last-Event-ID`` or
                               ``?after=`` resumes: nothing is lost while it is kept)
    GET  /chat/static/<file>   the page's own script and style (no CDN)
    POST /chat/upload          a file (multipart: file, text, id): an audio file is heard
                               as a voice note, an image or a log goes with the words
    GET  /chat/files/<t>/<n>   a file Fetch sent (/send), by its unguessable token

A diff arrives with its approval's nonce; its Approve and Reject buttons send "yes" or
"no" with that nonce and the diff message's id, exactly what a Telegram button sends:
the approval is answered only if it is still the one waiting (a stale button on an older
diff is refused here, and by the gateway and the approval's own checks behind it).
"""

from __future__ import annotations

import asyncio
import json
import logging
import mimetypes
import re
import uuid
from contextlib import suppress
from pathlib import Path
from typing import Any

from aiohttp import web

from channels import media
from channels.base import Capabilities, InboundSink
from channels.http import HttpServer
from channels.http.auth import WebAuth
from channels.http.sse import open_stream
from channels.web.files import SHOWN_INLINE, SentFiles, UploadRefused, read_upload
from channels.web.outbox import Event, Outbox
from channels.web.page import CSP, render_page
from channels.webchat_settings import WebChatSettings
from core.errors import SendFailed
from core.events import Attachment, Inbound, Outbound, OutboundFile, SendResult, SessionKey
from core.tasks import Spawner

log = logging.getLogger(__name__)

STATIC = Path(__file__).parent / "static"
_STATIC_TYPES = {".js": "text/javascript", ".css": "text/css"}
_CLIENT_ID = re.compile(r"^[A-Za-z0-9_-]{8,64}$")
_NONCE = re.compile(r"^[0-9a-f]{1,64}$")
_MESSAGE_REF = re.compile(r"^web-\d{1,18}$")
_ANSWERS = {"yes": "👍", "no": "👎"}
_HEADERS = {
    "Cache-Control": "no-store",
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}


class _Refused(Exception):
    def __init__(self, status: int, error: str) -> None:
        super().__init__(error)
        self.status, self.error = status, error


class WebChatChannel:
    name = "web"
    # Edits replace the progress message in place; the page renders fences itself.
    capabilities = Capabilities(
        message_limit=100_000,
        can_edit=True,
        markup="markdown",
        file_limit=50 * 1024 * 1024,  # kept on the host, served to the page: a bound
        image_limit=10 * 1024 * 1024,
    )

    def __init__(
        self,
        settings: WebChatSettings,
        http: HttpServer,
        auth: WebAuth,
        home: Path | None = None,
    ) -> None:
        self.chat = settings.chat
        # Uploads and sent files live in the home (none: the chat takes no files).
        self._sessions_root = home / "sessions" if home is not None else None
        self._sent = SentFiles(home / "web-files") if home is not None else None
        self._settings = settings
        self._http = http
        self._auth = auth
        self.outbox = Outbox(settings.outbox_size)
        self._sink: InboundSink | None = None
        self._closing = False
        self._streams: set[asyncio.Task[Any]] = set()
        # The nonce of the newest diff per chat: a button of any older one is stale.
        self._latest_nonce: dict[str, str] = {}
        # Diffs answered here (their nonces): a reloaded page shows their buttons off,
        # and a second press is refused.
        self._answered: set[str] = set()
        self._latest_diff: dict[str, str] = {}  # chat -> the newest diff's message id
        self._assets = {p.name: p.read_bytes() for p in STATIC.iterdir() if p.is_file()}
        guard = auth.require_auth
        http.add_route("GET", "/chat", guard(self._page))
        http.add_route("POST", "/chat/send", guard(self._send))
        http.add_route("GET", "/chat/events", guard(self._events))
        http.add_route("GET", "/chat/static/{name}", self._static)
        http.add_route("POST", "/chat/upload", guard(self._upload))
        http.add_route("GET", "/chat/files/{token}/{name}", guard(self._file))
        http.on_shutdown(self._end_streams)

    # -- lifecycle -------------------------------------------------------------------

    async def start(self, sink: InboundSink, spawner: Spawner) -> None:
        # No task of its own: each open page's stream runs in the listener's handler
        # task, which this channel tracks and ends on stop.
        if self._sink is not None:
            raise RuntimeError("web chat already started")
        await self.outbox.restore()  # what was said before a restart (a durable keep)
        for event in self.outbox.since(self.chat, 0).events:  # which diff waits, which not
            if event.nonce and event.kind == "owner":
                self._answered.add(event.nonce)
            elif event.nonce:
                self._latest_nonce[self.chat] = event.nonce
                self._latest_diff[self.chat] = event.message_id
        self._sink, self._closing = sink, False

    async def stop(self) -> None:
        self._sink = None
        await self._end_streams()

    async def _end_streams(self) -> None:
        """Every open event stream returns now (the listener is going away, or we are)."""
        self._closing = True
        await self.outbox.wake()
        streams = list(self._streams)
        if streams:
            await asyncio.wait(streams, timeout=2.0)

    async def diff_answered(self, chat: str, nonce: str, answer: str) -> None:
        """The approval behind a diff closed, answered anywhere (typed here, on a linked
        phone, from the dashboard): kept as answered, so a reload shows its buttons off
        and a press is refused. A button press here already did this."""
        if chat != self.chat or nonce in self._answered:
            return
        self._answered.add(nonce)
        await self.outbox.put(chat, answer, owner=True, nonce=nonce)

    def health(self) -> str:
        if self._sink is None:
            return "web chat: stopped"
        if not self._http.listening:  # the port was taken (see the start banner)
            return "web chat: off (the web listener could not start)"
        return f"web chat: {len(self._streams)} page(s) open"

    # -- outbound --------------------------------------------------------------------

    async def send(self, message: Outbound) -> SendResult:
        if self._sink is None:
            raise SendFailed("web chat is not started")
        event = await self.outbox.put(
            message.chat,
            message.text,
            reply_to=message.reply_to,
            edit_of=message.edit_of,
            nonce=message.approval_nonce,
        )
        if message.approval_nonce:
            self._latest_nonce[message.chat] = message.approval_nonce
            self._latest_diff[message.chat] = event.message_id
        return SendResult(message_id=event.message_id)

    async def send_file(self, file: OutboundFile) -> SendResult:
        if self._sink is None or self._sent is None:
            raise SendFailed("web chat is not started")
        link = await asyncio.to_thread(self._sent.keep, file.name, file.data)
        said = f"📎 {file.name}" + (f": {file.caption}" if file.caption else "")
        event = await self.outbox.put(file.chat, f"{said}\n{link}")
        return SendResult(message_id=event.message_id)

    async def set_typing(self, chat: str, typing: bool) -> None:
        return None

    # -- the page --------------------------------------------------------------------

    async def _page(self, request: web.Request) -> web.StreamResponse:
        since = self.outbox.since(self.chat, 0)
        body = render_page(since.events, self._auth.csrf_token(request), since.gap)
        return web.Response(text=body, content_type="text/html", headers=_HEADERS)

    async def _static(self, request: web.Request) -> web.StreamResponse:
        name = request.match_info["name"]
        data = self._assets.get(name)
        kind = _STATIC_TYPES.get(Path(name).suffix)
        if data is None or kind is None:
            raise web.HTTPNotFound()
        return web.Response(
            body=data,
            content_type=kind,
            headers={"Cache-Control": "no-cache", "X-Content-Type-Options": "nosniff"},
        )

    async def _file(self, request: web.Request) -> web.StreamResponse:
        found = (
            self._sent.find(request.match_info["token"], request.match_info["name"])
            if (self._sent is not None)
            else None
        )
        if found is None:
            raise web.HTTPNotFound()
        data = await asyncio.to_thread(found.read_bytes)
        mime = media.base_mime(mimetypes.guess_type(found.name)[0] or "")
        inline = mime in SHOWN_INLINE
        disposition = "inline" if inline else f'attachment; filename="{found.name}"'
        return web.Response(
            body=data,
            content_type=mime if inline else "application/octet-stream",
            headers={
                "Content-Disposition": disposition,
                "X-Content-Type-Options": "nosniff",
                "Cache-Control": "no-store",
                "Content-Security-Policy": "default-src 'none'; sandbox",
            },
        )

    async def _upload(self, request: web.Request) -> web.StreamResponse:
        sink = self._sink
        if sink is None or self._sessions_root is None:
            return web.json_response({"error": "Fetch is not running"}, status=503)
        try:
            upload = await read_upload(await request.multipart())
        except UploadRefused as refused:
            return web.json_response({"error": str(refused)}, status=400)
        except (ValueError, AssertionError):
            return web.json_response({"error": "the body is not a multipart form"}, status=400)
        client_id = upload.client_id if _CLIENT_ID.match(upload.client_id) else uuid.uuid4().hex
        message_id = "web:" + client_id
        folder = media.media_dir(self._sessions_root, SessionKey(self.name, self.chat))
        path = await asyncio.to_thread(
            media.save, folder, message_id, upload.mime, upload.kind, upload.data
        )
        label = {"audio": "audio", "image": "image"}.get(upload.kind, f"document {upload.name}")
        text = upload.text.strip() or f"[{label}]"
        attachment = Attachment(
            upload.kind, str(path), upload.mime, upload.name, size=len(upload.data)
        )
        inbound = Inbound(
            channel=self.name,
            chat=self.chat,
            sender=self.chat,
            message_id=message_id,
            text=text,
            from_owner=True,  # behind the web token: only the owner gets here
            attachments=(attachment,),
        )
        await self.outbox.put(
            self.chat,
            f"📎 {upload.name}" + (f"\n{upload.text}" if upload.text.strip() else ""),
            owner=True,
        )
        try:
            await sink(inbound)
        except Exception:
            log.exception("web chat: delivering %s failed", message_id)
            return web.json_response(
                {"error": "Fetch could not accept the message; see its log"}, status=500
            )
        return web.json_response(
            {"accepted": True, "message_id": message_id}, status=202, headers=_HEADERS
        )

    # -- inbound ---------------------------------------------------------------------

    async def _send(self, request: web.Request) -> web.StreamResponse:
        is_form = request.content_type != "application/json"
        try:
            inbound = await self._inbound(request, is_form)
            sink = self._sink
            if sink is None:
                raise _Refused(503, "Fetch is not running")
        except _Refused as refused:
            if is_form:
                raise web.HTTPBadRequest(text=refused.error) from None
            return web.json_response({"error": refused.error}, status=refused.status)
        if inbound.reaction is None:  # the owner's own words, for a reloaded page
            await self.outbox.put(self.chat, inbound.text, owner=True)
        try:
            await sink(inbound)
        except Exception:  # the gateway failed, not the page: say so, keep serving
            log.exception("web chat: delivering %s failed", inbound.message_id)
            return web.json_response(
                {"error": "Fetch could not accept the message; see its log"}, status=500
            )
        if (  # the waiting diff's own button: kept as answered (a press on another
            # message answers nothing: the gateway drops it)
            inbound.approval_nonce is not None
            and inbound.reply_to == self._latest_diff.get(self.chat)
        ):
            self._answered.add(inbound.approval_nonce)
            await self.outbox.put(self.chat, inbound.text, owner=True, nonce=inbound.approval_nonce)
        if is_form:  # the page without script: back to it
            return web.Response(status=303, headers={"Location": "/chat"})
        return web.json_response(
            {"accepted": True, "message_id": inbound.message_id}, status=202, headers=_HEADERS
        )

    async def _inbound(self, request: web.Request, is_form: bool) -> Inbound:
        payload: dict[str, Any]
        if is_form:
            form = await request.post()
            payload = {k: v for k, v in form.items() if isinstance(v, str)}
        else:
            try:
                payload = await request.json()
            except ValueError as err:
                raise _Refused(400, f"body is not valid JSON: {err}") from None
            if not isinstance(payload, dict):
                raise _Refused(400, 'body must be a JSON object like {"text": "..."}')
        text = _string(payload, "text")
        if not text.strip():
            raise _Refused(400, "say something: the message is empty")
        if len(text) > self._settings.max_message_chars:
            raise _Refused(400, f"message over {self._settings.max_message_chars} characters")
        client_id = _string(payload, "id")
        if client_id and not _CLIENT_ID.match(client_id):
            raise _Refused(400, "field 'id' must be 8-64 of A-Z a-z 0-9 _ -")
        nonce = _string(payload, "nonce") or None
        reply_to = _string(payload, "reply_to") or None
        reaction = None
        if nonce is not None:  # a diff's button: answers that diff, or nothing
            if not _NONCE.match(nonce) or reply_to is None or not _MESSAGE_REF.match(reply_to):
                raise _Refused(400, "a button needs the diff's nonce and message id")
            answer = text.strip().lower()
            if answer not in _ANSWERS:
                raise _Refused(400, "a diff's button says yes or no")
            if self._latest_nonce.get(self.chat) != nonce:
                raise _Refused(409, "that diff is no longer the one waiting; use the newest")
            if nonce in self._answered:
                raise _Refused(409, "that diff was answered already")
            # A reaction: the gateway drops it unless it answers the diff that waits now,
            # so a late press can never be read as a "yes" to something else.
            reaction, text = _ANSWERS[answer], answer
        elif reply_to is not None:
            raise _Refused(400, "field 'reply_to' is only for a diff's buttons")
        return Inbound(
            channel=self.name,
            chat=self.chat,
            sender=self.chat,
            message_id="web:" + (client_id or uuid.uuid4().hex),
            text=text,
            from_owner=True,  # behind the web token: only the owner gets here
            reply_to=reply_to,
            reaction=reaction,
            approval_nonce=nonce,
        )

    # -- the event stream ------------------------------------------------------------

    async def _events(self, request: web.Request) -> web.StreamResponse:
        last = _last_id(request)
        response = await open_stream(request)
        task = asyncio.current_task()
        if task is not None:
            self._streams.add(task)
        try:
            await self._stream(response, last)
        except ConnectionResetError:
            return response  # the page went away: nothing to finish
        finally:
            if task is not None:
                self._streams.discard(task)
        with suppress(ConnectionResetError):
            await response.write_eof()
        return response

    async def _stream(self, response: web.StreamResponse, last: int) -> None:
        told_gap = False
        while not self._closing and self._sink is not None:
            since = self.outbox.since(self.chat, last)
            if since.gap and not told_gap:
                told_gap = True
                await response.write(b"event: gap\ndata: {}\n\n")
            if since.events:
                for event in since.events:
                    await response.write(_frame(event))
                    last = event.id
                continue  # anything put while writing is picked up before waiting
            before = self.outbox.last_id
            with suppress(TimeoutError):
                async with asyncio.timeout(self._settings.heartbeat_seconds):
                    await self.outbox.changed()
            if self.outbox.last_id == before and not self._closing:
                await response.write(b": ping\n\n")


def _frame(event: Event) -> bytes:
    data = json.dumps(event.as_json(), ensure_ascii=False)
    return f"id: {event.id}\nevent: {event.kind}\ndata: {data}\n\n".encode()


def _last_id(request: web.Request) -> int:
    """Where a stream resumes: the browser's ``Last-Event-ID`` on a reconnect, else the
    page's ``?after=`` (what it rendered itself), else from the start of the keep."""
    raw = request.headers.get("Last-Event-ID") or request.query.get("after") or "0"
    try:
        return max(0, int(raw))
    except ValueError:
        return 0


def _string(payload: dict[str, Any], key: str) -> str:
    value = payload.get(key)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise _Refused(400, f"field {key!r} must be a string")
    try:  # a lone surrogate from JSON is not text and cannot be stored
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise _Refused(400, f"field {key!r} is not valid Unicode; send UTF-8 text") from None
    return value
