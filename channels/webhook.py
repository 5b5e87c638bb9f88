"""The generic webhook channel: signed JSON in, replies back as JSON (Shortcuts, scripts,
home automation). Whoever holds ``settings.webhook.secret`` is the owner.

Two routes on the shared ``HttpServer``, both ``POST``, both signed the same way::

    POST /webhook          {"text": "...", "chat": "...", "sender": "...",
                            "message_id": "...", "wait": 20}
      -> 202 {"accepted": true, "message_id": "...", "chat": "...", "replies": [...]}
    POST /webhook/replies  {"chat": "...", "wait": 20}
      -> 200 {"chat": "...", "replies": [...]}

Only ``text`` is required. ``chat`` (default ``"webhook"``) is the conversation, one
session per chat; ``chat`` and ``sender`` are 1-64 of ``A-Z a-z 0-9 _ . -``.
``message_id`` defaults to one derived from the signature, so a replayed request is
dropped by the gateway's dedupe. Replies are asynchronous: each chat has a mailbox, and
``wait`` (0-60 s, default 0) holds the answer open until a reply arrives and then a
second passes with no further one, or until ``wait`` runs out. A long task answers "on
it" first and its diff minutes later: fetch the rest from ``/webhook/replies`` (a long
poll: same ``wait``). A reply is ``{"id", "text", "reply_to", "edit_of", "time"}`` and
is handed out once.

Signing (HMAC-SHA256 with the secret, hex)::

    X-Fetch-Timestamp: <unix seconds, a fraction allowed: 1732670000 or 1732670000.123456>
    X-Fetch-Signature: sha256=<hex of HMAC(secret, "<timestamp>." + raw body)>

A timestamp more than five minutes off is refused, and a signature already accepted
within those five minutes is refused too (409), so a captured request cannot be replayed
at all, on either route (a replayed poll would take replies meant for the owner). Sign
every request anew: the timestamp is the nonce, so a client that polls more than once a
second (the same body twice in one second) sends the fraction (``date +%s.%N``,
``f"{time.time():.6f}"``) and is never taken for a replay. In a shell::

    ts=$(date +%s.%N); body='{"text":"/status","wait":10}'
    sig=$(printf '%s.%s' "$ts" "$body" | openssl dgst -sha256 -hmac "$SECRET" -r | cut -d' ' -f1)
    curl -s http://127.0.0.1:8787/webhook -H "X-Fetch-Timestamp: $ts" \\
         -H "X-Fetch-Signature: sha256=$sig" -H 'Content-Type: application/json' -d "$body"

The replay cap is per client, a client being a ``chat``: each chat may have 10,000
signed requests accepted in five minutes (a request a second is 300), and 32 chats at
once; past that a chat's requests are refused (429) until its older ones leave the
window, and one chat's flood never refuses another chat's requests (channels/replay.py).

Errors are JSON ``{"error": "..."}``: 401 bad or missing signature, 409 a replayed
request, 429 too many signed requests of one chat in five minutes, 413 body over
``max_body_bytes``, 400 malformed JSON or fields, 503 while Fetch is not running.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import logging
import re
import time
from collections import deque
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

from aiohttp import web

from channels.base import Capabilities, InboundSink
from channels.http import HttpServer
from channels.replay import CAPACITY, ReplayGuard
from channels.webhook_settings import WebhookSettings
from core.errors import ConfigError, SendFailed
from core.events import Inbound, Outbound, SendResult
from core.tasks import Spawner

log = logging.getLogger(__name__)

SIGNATURE_HEADER = "X-Fetch-Signature"
TIMESTAMP_HEADER = "X-Fetch-Timestamp"
MAX_SKEW_SECONDS = 300
MAX_WAIT_SECONDS = 60.0
SETTLE_SECONDS = 1.0  # after a reply, how long a quiet spell ends a wait
# Unix seconds, a fraction allowed (the timestamp is the nonce: sub-second polls differ).
_STAMP = re.compile(r"^[0-9]{1,12}(\.[0-9]{1,9})?$")
_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")  # the allowlist's webhook:<name> shape
_NAMES = {"chat": _NAME, "sender": _NAME, "message_id": re.compile(r"^[\x21-\x7e]{1,128}$")}


# The example secret in fetch.env.example says this; a real one never does.
PLACEHOLDER = "change-me"


@dataclass(frozen=True, slots=True)
class Reply:
    id: str
    text: str
    reply_to: str | None
    edit_of: str | None
    time: float


class _Refused(Exception):
    """A request answered with an error status; never leaves this module."""

    def __init__(self, status: int, error: str) -> None:
        super().__init__(error)
        self.status, self.error = status, error


def sign(secret: str, timestamp: str, body: bytes) -> str:
    """The ``X-Fetch-Signature`` value for ``body`` sent at ``timestamp``."""
    digest = hmac.new(secret.encode(), timestamp.encode() + b"." + body, hashlib.sha256)
    return "sha256=" + digest.hexdigest()


class WebhookChannel:
    name = "webhook"
    capabilities = Capabilities(message_limit=100_000, markup="json")

    def __init__(
        self,
        settings: WebhookSettings,
        http: HttpServer,
        *,
        path: str = "/webhook",
        mailbox_size: int = 200,
        settle: float = SETTLE_SECONDS,
        clock: Callable[[], float] = time.time,
        replay_capacity: int = CAPACITY,
    ) -> None:
        if not settings.secret or len(settings.secret) < 16:
            # The secret is the owner's password here: anyone holding it is the owner.
            raise ConfigError("webhook.secret", "", "a random secret of 16+ characters")
        if PLACEHOLDER in settings.secret.lower():
            # fetch.env.example's own value: public, so anyone would be the owner.
            raise ConfigError(
                "webhook.secret",
                "",
                "your own random secret (openssl rand -hex 24), not the example's",
            )
        self._secret = settings.secret
        self._max_body = settings.max_body_bytes
        self._mailbox_size = mailbox_size
        self._settle = settle
        self._clock = clock
        self._replays = ReplayGuard(MAX_SKEW_SECONDS, replay_capacity)  # per chat
        self._sink: InboundSink | None = None
        self._boxes: dict[str, deque[Reply]] = {}
        self._changed = asyncio.Condition()
        self._sent = 0
        self._last_request: float | None = None
        http.add_route("POST", path, self._on_message)
        http.add_route("POST", path.rstrip("/") + "/replies", self._on_replies)
        self._closing = False
        http.on_shutdown(self._end_polls)

    # -- lifecycle -------------------------------------------------------------------

    async def start(self, sink: InboundSink, spawner: Spawner) -> None:
        # No task of its own: requests run in the HTTP listener's handlers.
        if self._sink is not None:
            raise RuntimeError("webhook channel already started")
        self._sink, self._closing = sink, False

    async def stop(self) -> None:
        self._sink = None
        await self._end_polls()

    async def _end_polls(self) -> None:
        """Long polls answer now with what they have (the listener is going away, or the
        channel is), instead of holding the shutdown for their whole ``wait``."""
        self._closing = True
        await self._wake_all()

    def health(self) -> str:
        if self._sink is None:
            return "webhook: stopped"
        if self._last_request is None:
            return "webhook: listening, no requests yet"
        return f"webhook: listening, last request {int(self._clock() - self._last_request)}s ago"

    # -- outbound --------------------------------------------------------------------

    async def send(self, message: Outbound) -> SendResult:
        if self._sink is None:
            raise SendFailed("webhook channel is not started")
        self._sent += 1
        reply = Reply(
            id=f"out-{self._sent}",
            text=message.text,
            reply_to=message.reply_to,
            edit_of=message.edit_of,
            time=self._clock(),
        )
        # Bounded: a chat nobody polls must not grow without end; the oldest go first.
        box = self._boxes.setdefault(message.chat, deque(maxlen=self._mailbox_size))
        box.append(reply)
        await self._wake_all()
        return SendResult(message_id=reply.id)

    async def set_typing(self, chat: str, typing: bool) -> None:
        return None

    # -- inbound ---------------------------------------------------------------------

    async def _on_message(self, request: web.Request) -> web.StreamResponse:
        try:
            payload, signature = await self._verified(request)
            text = _field(payload, "text", required=True)
            chat = _field(payload, "chat") or "webhook"
            wait = _wait(payload)
            sink = self._sink
            if sink is None:
                raise _Refused(503, "Fetch is not running")
            inbound = Inbound(
                channel=self.name,
                chat=chat,
                sender=_field(payload, "sender") or "webhook",
                # Derived from the signature when absent (unique: a replayed signature
                # is refused above, and the gateway's dedupe would drop it too).
                message_id=_field(payload, "message_id") or "sig-" + signature[:32],
                text=text,
                from_owner=True,
            )
        except _Refused as refused:
            return _error(refused)
        try:
            await sink(inbound)
        except Exception:  # the gateway failed, not the caller: say so, keep serving
            log.exception("webhook: delivering %s failed", inbound.message_id)
            return _error(_Refused(500, "Fetch could not accept the message; see its log"))
        replies = await self._collect(chat, wait)
        return web.json_response(
            {"accepted": True, "message_id": inbound.message_id, "chat": chat, "replies": replies},
            status=202,
        )

    async def _on_replies(self, request: web.Request) -> web.StreamResponse:
        try:
            payload, _signature = await self._verified(request)
            chat = _field(payload, "chat") or "webhook"
            wait = _wait(payload)
        except _Refused as refused:
            return _error(refused)
        return web.json_response({"chat": chat, "replies": await self._collect(chat, wait)})

    async def _verified(self, request: web.Request) -> tuple[dict[str, Any], str]:
        """The JSON object of a request whose size, signature and timestamp check out."""
        body = await self._read_bounded(request)
        stamp = request.headers.get(TIMESTAMP_HEADER, "")
        given = request.headers.get(SIGNATURE_HEADER, "")
        expected = sign(self._secret, stamp, body)
        # Constant time, and on bytes: compare_digest rejects non-ASCII str outright.
        if not given or not hmac.compare_digest(given.encode(), expected.encode()):
            raise _Refused(401, f"missing or bad {SIGNATURE_HEADER} (see the docs for signing)")
        if not _STAMP.match(stamp):
            raise _Refused(401, f"{TIMESTAMP_HEADER} must be unix seconds (a fraction allowed)")
        signed_at = float(stamp)
        now = self._clock()
        if abs(now - signed_at) > MAX_SKEW_SECONDS:
            raise _Refused(
                401, f"{TIMESTAMP_HEADER} is more than 5 minutes off; check the sender's clock"
            )
        try:
            payload = json.loads(body)
        except ValueError as err:  # UnicodeDecodeError included
            raise _Refused(400, f"body is not valid JSON: {err}") from None
        if not isinstance(payload, dict):
            raise _Refused(400, 'body must be a JSON object like {"text": "..."}')
        # The client is the chat, read from the signed body: a replay cannot move to
        # another chat's cap, and one chat's flood cannot fill another's.
        client = _field(payload, "chat") or "webhook"
        first = self._replays.first_use(client, expected, signed_at, now)
        if first is None:
            raise _Refused(
                429, "too many signed requests for this chat in five minutes; try again later"
            )
        if not first:
            log.warning("webhook: replayed signed request refused")
            raise _Refused(
                409,
                "this signed request was already accepted; sign each request anew (a fresh "
                f"{TIMESTAMP_HEADER}: with a fraction, e.g. date +%s.%N, for more than one a "
                "second)",
            )
        self._last_request = self._clock()
        return payload, expected.removeprefix("sha256=")

    async def _read_bounded(self, request: web.Request) -> bytes:
        too_big = _Refused(413, f"body is over {self._max_body} bytes")
        if request.content_length is not None and request.content_length > self._max_body:
            raise too_big
        body = bytearray()
        # Read in pieces and stop at the limit: a lying or absent Content-Length must
        # not make us buffer an unbounded body.
        async for piece in request.content.iter_chunked(16 * 1024):
            body += piece
            if len(body) > self._max_body:
                raise too_big
        return bytes(body)

    # -- mailboxes -------------------------------------------------------------------

    async def _wake_all(self) -> None:
        async with self._changed:
            self._changed.notify_all()

    async def _collect(self, chat: str, wait: float) -> list[dict[str, Any]]:
        """Drain ``chat``'s mailbox after waiting as the module docstring describes."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + wait
        async with self._changed:
            while self._sink is not None and not self._closing:
                pending = bool(self._boxes.get(chat))
                left = deadline - loop.time()
                if left <= 0:
                    break
                try:
                    await asyncio.wait_for(
                        self._changed.wait(), min(left, self._settle) if pending else left
                    )
                except TimeoutError:
                    if pending:
                        break
            box = self._boxes.pop(chat, None) or ()
            return [asdict(reply) for reply in box]


def _field(payload: dict[str, Any], key: str, *, required: bool = False) -> str:
    value = payload.get(key)
    if value is None and not required:
        return ""
    if not isinstance(value, str) or (required and not value.strip()):
        need = "a non-empty string" if required else "a string"
        raise _Refused(400, f"field {key!r} must be {need}")
    try:  # JSON may escape a lone surrogate ("\ud800"): not text, and not storable
        value.encode("utf-8")
    except UnicodeEncodeError as err:
        raise _Refused(
            400,
            f"field {key!r} is not valid Unicode (a lone surrogate at "
            f"character {err.start}); send UTF-8 text",
        ) from None
    # Names become session folders and log keys: short and plain, or refused.
    if key in _NAMES and not _NAMES[key].match(value):
        raise _Refused(400, f"field {key!r} must be 1-64 of A-Z a-z 0-9 _ . - (got {value!r:.80})")
    return value


def _wait(payload: dict[str, Any]) -> float:
    value = payload.get("wait", 0)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _Refused(400, "field 'wait' must be a number of seconds")
    if not 0 <= value <= MAX_WAIT_SECONDS:
        raise _Refused(400, f"field 'wait' must be between 0 and {MAX_WAIT_SECONDS:.0f}")
    return float(value)


def _error(refused: _Refused) -> web.Response:
    return web.json_response({"error": refused.error}, status=refused.status)
