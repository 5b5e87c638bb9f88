"""The model relay: the kennel's only way out, and the only holder of real credentials.

It listens on a unix socket (a file the kennel can see; no network needed), forwards
each request to the one upstream configured for the harness, strips whatever
credential the CLI sent, injects the real one, logs the call and enforces the task's
token budget. The CLI inside only ever holds the run's secret (``RelaySpec.secret``).

What it forwards is done in the owner's name, so it forwards little (issue "Trust III"):
only a connection from the kennel's uid is served (its peer credentials, checked on
accept), only a request carrying the run's secret (401 otherwise), only the vendor's
inference endpoints (kennel/relay_allow.py; 403 otherwise), and only without the tools
the vendor would run itself on the owner's account (kennel/relay_tools.py). The real key
never comes back: it is scrubbed from every answer (kennel/relay_scrub.py).

Whatever talks to the socket is hostile, and the relay runs on Fetch's own event loop,
so it bounds everything a client controls (``RelayLimits``): the request target is only
ever a path under the upstream (kennel/relay_url.py), redirects are never followed,
headers must arrive within a timeout, connections, concurrent upstream calls, body size
and bytes held in memory are capped. A stream the upstream drops is cut, never closed
as if complete and never followed by a second response.
"""

from __future__ import annotations

import asyncio
import hmac
import json
import logging
import os
import socket
import struct
import time
from collections import deque
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web
from yarl import URL

from kennel.base import CallGate, CallHook
from kennel.credentials import OAUTH_BETA
from kennel.relay_allow import allowed
from kennel.relay_scrub import Scrubbers
from kennel.relay_signin import ChatGptSignIn, SignInError, SignInExpired
from kennel.relay_tools import Stripper
from kennel.relay_url import BadTarget, join, upstream_base
from kennel.relay_usage import Usage, UsageScanner, model_of

log = logging.getLogger(__name__)

# The key the CLIs held before each run had its own secret; kept for old callers, and
# never accepted by the relay unless a run's secret is this very string.
PLACEHOLDER_KEY = "fetch-relay-placeholder"
# Headers a CLI might use to carry a credential; all are dropped before forwarding.
CREDENTIAL_HEADERS = {
    "authorization",
    "x-api-key",
    "x-goog-api-key",
    "api-key",
    "cookie",
    "proxy-authorization",
    "openai-organization",
    "openai-project",
    "chatgpt-account-id",  # a sign-in's account: the relay names it, not the kennel
}
# Where codex, signed in with ChatGPT, sends its backend calls (its chatgpt_base_url must
# contain this, or it uses other paths): taken off before the sign-in's upstream.
SIGNIN_PREFIX = "/backend-api"
HOP_BY_HOP = {
    "connection",
    "keep-alive",
    "transfer-encoding",
    "te",
    "trailer",
    "upgrade",
    "host",
    "content-length",
    "accept-encoding",
}
# Headers that ask a proxy or the upstream to route elsewhere: the kennel does not choose.
ROUTING_HEADERS = {
    "forwarded",
    "x-forwarded-host",
    "x-forwarded-for",
    "x-forwarded-proto",
    "x-forwarded-port",
    "x-forwarded-server",
    "x-real-ip",
    "x-original-url",
    "x-rewrite-url",
    "x-http-method-override",
    "x-host",
}
# How each vendor expects its key.
AUTH_STYLE = {"anthropic": "x-api-key", "gemini": "x-goog-api-key", "openai": "bearer"}
# Not passed back to the kennel: the body is sent decoded (it was scrubbed decoded).
RESPONSE_DROPPED = HOP_BY_HOP | {"content-encoding"}
# A body above this is cleaned in a thread, off the event loop every relay shares.
_CLEAN_INLINE = 1024 * 1024
_BUSY = (
    b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain\r\n"
    b"Content-Length: 40\r\nConnection: close\r\n\r\n"
    b"relay busy: too many connections open\r\n\r\n"
)


@dataclass(frozen=True, slots=True)
class RelayLimits:
    """What one kennel may hold of its relay (and so of Fetch's event loop)."""

    max_connections: int = 64  # open connections; more are answered 503 and closed
    max_upstream: int = 8  # requests at the vendor at once; the rest wait their turn
    max_body: int = 64 * 1024 * 1024  # one request body (413 above)
    max_buffered: int = 128 * 1024 * 1024  # request bodies held at once (503 above)
    header_timeout: float = 10.0  # a connection's headers, from connect or its last answer
    body_timeout: float = 120.0  # a request's body, once its headers are in (408 after)


@dataclass
class RelayStats:
    calls: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    # The latest calls (the full record is relay.jsonl): many requests cost no memory.
    log: deque[dict[str, Any]] = field(default_factory=lambda: deque(maxlen=500))


class _Refused(Exception):
    def __init__(self, status: int, kind: str, message: str) -> None:
        super().__init__(message)
        self.status, self.kind, self.message = status, kind, message


class _Busy(asyncio.Protocol):
    """A connection over ``max_connections``: told so and closed, nothing read."""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.WriteTransport)
        transport.write(_BUSY)
        transport.close()


class _Counted(asyncio.Protocol):
    """aiohttp's protocol for one connection, counted from accept to close (aiohttp's own
    count starts only once the connection is set up: a burst of accepts would pass it),
    and handed to aiohttp only when ``admits`` the peer: anyone else is hung up on before
    a byte is read."""

    def __init__(
        self,
        inner: asyncio.Protocol,
        open_count: list[int],
        admits: Callable[[asyncio.BaseTransport], bool],
    ) -> None:
        self._inner = inner
        self._count = open_count
        self._count[0] += 1
        self._admits = admits
        self._served = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        if not self._admits(transport):
            transport.close()  # nothing was read, nothing is said
            return
        self._served = True
        self._inner.connection_made(transport)

    def data_received(self, data: bytes) -> None:
        if self._served:
            self._inner.data_received(data)

    def eof_received(self) -> bool | None:
        return self._inner.eof_received() if self._served else None

    def pause_writing(self) -> None:
        if self._served:
            self._inner.pause_writing()

    def resume_writing(self) -> None:
        if self._served:
            self._inner.resume_writing()

    def connection_lost(self, exc: Exception | None) -> None:
        self._count[0] -= 1
        if self._served:
            self._inner.connection_lost(exc)


class ModelRelay:
    def __init__(
        self,
        *,
        socket_path: Path,
        upstream: str,
        provider: str,
        api_key: str | None,
        secret: str,
        harness: str,
        task_id: int | None,
        log_path: Path,
        token_budget: int = 0,
        mcp: Callable[[web.Request], Awaitable[web.StreamResponse]] | None = None,
        limits: RelayLimits | None = None,
        on_call: CallHook | None = None,
        gate: CallGate | None = None,
        peer_uids: frozenset[int] = frozenset(),
        allow_server_tools: Iterable[str] = (),
        auth: str = "api_key",
        signin: ChatGptSignIn | None = None,
    ) -> None:
        if not secret:
            raise ValueError("the relay needs the run's secret: without one it would serve anyone")
        # Fetch's memory as an MCP server (orchestrator/memory/mcp_server.py): served on
        # this same socket at /mcp, so the kennel needs no other way out.
        self.mcp = mcp
        self.socket_path = socket_path
        self._base: URL = upstream_base(upstream)
        self.upstream = str(self._base)
        self.provider = provider
        self._api_key = api_key
        self._auth = auth  # "oauth": a subscription's token, sent as a bearer
        # "chatgpt", "google", "github": a CLI's sign-in, whose credential headers it gives
        # and refreshes on the host (kennel/relay_signin.py, relay_signin_google.py); on a
        # vendor 401 it is refreshed and the call asked again, once.
        self._signin = signin
        if auth in ("chatgpt", "google", "github") and signin is None:
            raise ValueError(f"a relay for a {auth} sign-in needs the sign-in")
        self.secret = secret
        # Fetch itself (tests, the unsafe-local kennel) and the uids the backend names.
        self.peer_uids = frozenset({os.geteuid()}) | peer_uids
        self._strip = Stripper(provider, allow_server_tools)
        if self._strip.unknown:
            log.warning("relay: unknown server tools %s are not allowed", self._strip.unknown)
        self._told: set[str] = set()  # what was already logged as removed
        self.harness = harness
        self.task_id = task_id
        self.log_path = log_path
        self.token_budget = token_budget
        self.on_call, self.gate = on_call, gate  # the cost ledger and its budgets
        self.limits = limits or RelayLimits()
        self.stats = RelayStats()
        self._runner: web.AppRunner | None = None
        self._server: asyncio.AbstractServer | None = None
        self._client: aiohttp.ClientSession | None = None
        self._slots = asyncio.Semaphore(self.limits.max_upstream)
        self._buffered = 0  # bytes of request bodies held right now
        self._open = [0]  # connections open right now

    async def __aenter__(self) -> ModelRelay:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    async def start(self) -> None:
        if self._runner is not None:
            raise RuntimeError("relay already started")
        self.socket_path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        if self.socket_path.exists():
            self.socket_path.unlink()
        app = web.Application(client_max_size=self.limits.max_body)
        app.router.add_route("*", "/{tail:.*}", self._handle)
        self._client = aiohttp.ClientSession(
            timeout=aiohttp.ClientTimeout(total=None, sock_connect=15, sock_read=600),
            # The key is scrubbed from what comes back, and usage read from it: both need
            # the bytes as sent (identity is asked for; anything else is decoded here).
            auto_decompress=True,
            trust_env=False,  # no proxy from the environment: the key goes to the upstream
            cookie_jar=aiohttp.DummyCookieJar(),  # and nothing one call set rides the next
        )
        # aiohttp closes a connection whose handler is idle (no complete request yet)
        # ``keepalive_timeout`` after it opened or last answered: that is the header
        # timeout a client sending headers byte by byte runs into. A body left unread (a
        # refusal) is drained for a second at most (so the client can read why), then cut.
        runner = web.AppRunner(
            app,
            access_log=None,
            shutdown_timeout=1.0,
            keepalive_timeout=self.limits.header_timeout,
            lingering_time=1.0,
        )
        await runner.setup()
        try:
            self._server = await asyncio.get_running_loop().create_unix_server(
                self._protocol, str(self.socket_path)
            )
            self._open_socket_to_peers()
        except Exception:
            if self._server is not None:
                self._server.close()
                self._server = None
            await runner.cleanup()
            await self._client.close()
            raise
        self._runner = runner

    def _open_socket_to_peers(self) -> None:
        """The socket's own mode admits just the one kennel uid when it can (root gives it
        the socket); otherwise (several uids, or one a non-root Fetch cannot give it to)
        it is open to all, and the folder and the peer check keep others out."""
        me = os.geteuid()
        others = self.peer_uids - {me}
        if len(others) == 1 and me == 0:
            os.chown(self.socket_path, next(iter(others)), -1)
        shared = len(others) > 1 or (bool(others) and me != 0)
        os.chmod(self.socket_path, 0o666 if shared else 0o600)

    def _admits(self, transport: asyncio.BaseTransport) -> bool:
        """Whether the process on the other end runs as one of ``peer_uids``."""
        sock = transport.get_extra_info("socket")
        try:
            creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
            pid, uid, _gid = struct.unpack("3i", creds)
        except (AttributeError, OSError, struct.error) as err:
            log.warning(
                "relay %s: refused a connection: no peer credentials (%s)", self.socket_path, err
            )
            return False
        if uid in self.peer_uids:
            return True
        log.warning(
            "relay %s: refused a connection from pid %d as uid %d: not the kennel's",
            self.socket_path,
            pid,
            uid,
        )
        return False

    def _protocol(self) -> asyncio.Protocol:
        assert self._runner is not None and self._runner.server is not None
        if self._open[0] >= self.limits.max_connections:
            return _Busy()
        return _Counted(self._runner.server(), self._open, self._admits)

    async def stop(self) -> None:
        # Close the upstream side first: a request hanging on the vendor is aborted, so
        # its handler ends and the server side can shut down at once (a /stop is waiting).
        if self._client is not None:
            await self._client.close()
            self._client = None
        if self._server is not None:
            self._server.close()
            self._server = None
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        if self.socket_path.exists():
            self.socket_path.unlink()

    def _headers(self, incoming: Any, removed: list[str]) -> dict[str, str]:
        dropped = CREDENTIAL_HEADERS | HOP_BY_HOP | ROUTING_HEADERS
        headers = {k: v for k, v in incoming.items() if k.lower() not in dropped}
        for name in [k for k in headers if k.lower() == "anthropic-beta"]:
            kept, flags = self._strip.beta(headers.pop(name))
            removed += [f"beta {flag}" for flag in flags]
            if kept:
                headers[name] = kept
        headers["Accept-Encoding"] = "identity"  # see auto_decompress
        if self._api_key and self._auth == "oauth":
            # A subscription's token (kennel/credentials.py): a bearer, and the vendor's
            # OAuth flag among the beta flags the CLI sent (Claude Code sends it itself).
            headers["Authorization"] = f"Bearer {self._api_key}"
            name = next((k for k in headers if k.lower() == "anthropic-beta"), "anthropic-beta")
            flags = [f for f in headers.get(name, "").split(",") if f.strip()]
            if OAUTH_BETA not in flags:
                headers[name] = ",".join([*flags, OAUTH_BETA])
        elif self._api_key:
            style = AUTH_STYLE.get(self.provider, "bearer")
            if style == "bearer":
                headers["Authorization"] = f"Bearer {self._api_key}"
            else:
                headers[style] = self._api_key
        return headers

    def _over_budget(self) -> bool:
        used = self.stats.tokens_in + self.stats.tokens_out
        return self.token_budget > 0 and used >= self.token_budget

    def _authentic(self, request: web.Request) -> bool:
        """Whether the request carries the run's secret, wherever its CLI puts a key."""
        offered = [request.headers.get(h, "") for h in ("x-api-key", "x-goog-api-key", "api-key")]
        scheme, _, token = request.headers.get("Authorization", "").partition(" ")
        if scheme.lower() == "bearer":
            offered.append(token.strip())
        if self.provider == "gemini":
            offered += request.query.getall("key", [])
        want = self.secret.encode()
        # Constant time: how much of a guess was right must not show in the answer's time.
        return any(hmac.compare_digest(o.encode(), want) for o in offered if o)

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        started = time.monotonic()
        if not self._authentic(request):
            log.warning(
                "relay %s: refused %s without the run's secret", self.harness, request.method
            )
            return self._refuse(
                request,
                "",
                started,
                _Refused(401, "authentication_error", "relay: not this run's key"),
            )
        path = request.path.rstrip("/")
        if self.mcp is not None and (path == "/mcp" or path.startswith("/mcp/")):
            # Never forwarded to the vendor, and not counted as a vendor call: an MCP
            # client may hold a stream open for the whole task. /mcp is Fetch's memory,
            # /mcp/<server> one of the owner's servers (orchestrator/mcphost/).
            return await self.mcp(request)
        model = ""
        held = 0
        removed: list[str] = []
        try:
            target = request.raw_path
            rules = self.provider
            if self._auth == "google":
                rules = "codeassist"  # Gemini CLI signed in: Code Assist's own calls
            elif self._auth == "chatgpt":
                # Codex's ChatGPT backend calls: only those under its prefix, checked
                # against the sign-in's own list (kennel/relay_allow.py "chatgpt").
                rules = "chatgpt"
                rest = target[len(SIGNIN_PREFIX) :]
                if target.startswith(SIGNIN_PREFIX) and rest[:1] in ("/", "?"):
                    target = rest
                else:
                    target = "/-" + target  # not a sign-in call: refused below
            url = join(self._base, target)
            path = target.partition("?")[0]
            if not allowed(rules, request.method, path):
                log.warning("relay %s: refused %s %s", self.harness, request.method, path[:200])
                raise _Refused(
                    403,
                    "permission_error",
                    f"relay: {request.method} {path[:200]} is not a model call; "
                    "Fetch forwards only the vendor's inference endpoints",
                )
            if self.provider == "gemini" and "key" in url.query:
                url = url.without_query_params("key")  # the run's secret, not the vendor's
            body = await self._read_body(request)
            held = len(body)
            body, model = await self._clean(request, body, removed)
            if self._over_budget():
                used = self.stats.tokens_in + self.stats.tokens_out
                raise _Refused(
                    429,
                    "budget_exceeded",
                    f"Fetch budget exceeded: this task used {used} tokens of its "
                    f"{self.token_budget} budget",
                )
            refused = self.gate() if self.gate is not None else None
            if refused:
                # 402, not 429: the CLIs retry a 429 (and would spin until their own
                # limit); a spent budget does not come back by waiting a few seconds.
                raise _Refused(402, "budget_exceeded", f"Fetch: {refused}")
            async with self._slots:
                return await self._forward(request, url, body, model, started, removed)
        except BadTarget as err:
            return self._refuse(
                request, model, started, _Refused(400, "bad_target", f"relay: {err}")
            )
        except _Refused as refusal:
            return self._refuse(request, model, started, refusal)
        finally:
            self._buffered -= held

    async def _read_body(self, request: web.Request) -> bytes:
        """The whole body, within ``max_body``, ``max_buffered`` and ``body_timeout``."""
        lim = self.limits
        length = request.content_length or 0
        if length > lim.max_body:
            raise _Refused(
                413, "too_large", f"relay: request body of {length} bytes is over {lim.max_body}"
            )
        body = bytearray()
        kept = False
        try:
            async with asyncio.timeout(lim.body_timeout):
                async for chunk in request.content.iter_chunked(256 * 1024):
                    if len(body) + len(chunk) > lim.max_body:
                        raise _Refused(
                            413, "too_large", f"relay: request body is over {lim.max_body} bytes"
                        )
                    if self._buffered + len(chunk) > lim.max_buffered:
                        raise _Refused(
                            503, "relay_busy", "relay busy: too many request bytes in flight"
                        )
                    self._buffered += len(chunk)
                    body += chunk
        except TimeoutError:
            raise _Refused(
                408, "timeout", f"relay: the request body took over {lim.body_timeout:g} s"
            ) from None
        else:
            kept = True  # still counted: the caller releases it when the call is done
        finally:
            if not kept:
                self._buffered -= len(body)
        return bytes(body)

    async def _clean(
        self, request: web.Request, body: bytes, removed: list[str]
    ) -> tuple[bytes, str]:
        """The body as it goes to the vendor, without the features the owner did not allow
        (kennel/relay_tools.py), and the model it asks for."""
        encoding = request.headers.get("Content-Encoding", "identity").strip().lower()
        if encoding not in ("", "identity"):
            raise _Refused(
                415, "invalid_request_error", f"relay: a {encoding} body cannot be checked"
            )
        if request.method != "POST" or not body:
            return b"", model_of(b"", request.path)
        if len(body) > _CLEAN_INLINE:
            parsed = await asyncio.to_thread(self._rewrite, body, removed)
        else:
            parsed = self._rewrite(body, removed)
        if parsed is None:
            raise _Refused(400, "invalid_request_error", "relay: the body is not a JSON object")
        fresh = sorted(set(removed) - self._told)
        if fresh:
            self._told.update(fresh)
            log.info("relay %s: removed vendor-side %s", self.harness, ", ".join(fresh))
        cleaned, model = parsed
        return cleaned, model_of(b"", request.path) or model  # Gemini: the model is in the path

    def _rewrite(self, body: bytes, removed: list[str]) -> tuple[bytes, str] | None:
        """Parsed, cleaned and written again, always: what the vendor reads is exactly what
        was checked (a second "tools" key, say, cannot hide behind the first). None: not a
        JSON object."""
        try:
            parsed = json.loads(body)
        except ValueError:
            return None
        if not isinstance(parsed, dict):
            return None
        removed += self._strip.body(parsed)
        inner = parsed.get("request")
        if self._auth == "google" and isinstance(inner, dict):
            # Code Assist wraps the Gemini request: its tools are inside.
            removed += self._strip.body(inner)
        model = str(parsed.get("model", ""))[:200]
        try:
            return json.dumps(parsed, ensure_ascii=False, separators=(",", ":")).encode(), model
        except UnicodeEncodeError:  # a lone surrogate escape: ASCII escapes carry it
            return json.dumps(parsed, separators=(",", ":")).encode(), model

    async def _forward(
        self,
        request: web.Request,
        url: URL,
        body: bytes,
        model: str,
        started: float,
        removed: list[str],
    ) -> web.StreamResponse:
        if self._client is None or self._client.closed:
            raise web.HTTPServiceUnavailable(text="relay is shutting down")
        scanner = UsageScanner()
        response: web.StreamResponse | None = None
        sent: list[web.StreamResponse] = []  # the answer once its headers went out
        status = 502
        try:
            for attempt in (1, 2):
                headers = self._headers(request.headers, removed)
                if self._signin is not None:
                    headers.update(await self._signed_in(None))
                scrub = Scrubbers(self._api_key, *self._signed_secrets())
                async with self._client.request(
                    request.method,
                    url,
                    data=body,
                    headers=headers,
                    allow_redirects=False,  # a redirect would take the key to its Location
                ) as upstream:
                    if upstream.status == 401 and self._signin is not None and attempt == 1:
                        # The access token was refused: refreshed on the host, asked again.
                        await self._signed_in(headers["Authorization"].removeprefix("Bearer "))
                        continue
                    if self._signin is not None and upstream.status != 401:
                        # It served: a later 401 for it may be refreshed again at once.
                        self._signin.served(headers["Authorization"].removeprefix("Bearer "))
                    response = await self._pass_back(request, upstream, scanner, scrub, sent)
                    status = upstream.status
                    break
        except aiohttp.ClientError as err:
            response = response or (sent[0] if sent else None)
            if response is None:
                raise _Refused(502, "relay_error", f"upstream unreachable: {err}") from err
            # Headers and part of the body are out: the only honest end is a cut
            # connection (the client sees an incomplete body), never a tidy end of
            # stream and never a second response inside the first.
            self._record(
                request,
                model,
                response.status,
                started,
                scanner.close(),
                error=f"stream cut: {err}",
                removed=removed,
            )
            if request.transport is not None:
                request.transport.abort()
            return response
        self._record(request, model, status, started, scanner.close(), removed=removed)
        assert response is not None  # the loop ends in a response or raises
        return response

    async def _pass_back(
        self,
        request: web.Request,
        upstream: aiohttp.ClientResponse,
        scanner: UsageScanner,
        scrub: Scrubbers,
        sent: list[web.StreamResponse],
    ) -> web.StreamResponse:
        """The vendor's answer, streamed to the kennel without the credential in it."""
        if 300 <= upstream.status < 400:
            # Scrubbed like any header (then cut): a Location may carry the credential.
            where = scrub.text(upstream.headers.get("Location", ""))[:200]
            raise _Refused(
                502,
                "relay_error",
                f"upstream answered {upstream.status} (to {where!r}); "
                "the relay follows no redirects",
            )
        response = web.StreamResponse(status=upstream.status)
        for key, value in upstream.headers.items():
            if key.lower() not in RESPONSE_DROPPED:
                response.headers[key] = scrub.text(value)
        # Kept before the first byte goes: a stream cut after it must not get a second
        # response (see _forward).
        sent.append(response)
        await response.prepare(request)
        async for chunk in upstream.content.iter_any():
            scanner.feed(chunk)
            if passed := scrub.feed(chunk):  # all of it may be held a moment
                await response.write(passed)
        if held := scrub.close():
            await response.write(held)
        await response.write_eof()
        return response

    async def _signed_in(self, rejected: str | None) -> dict[str, str]:
        """The sign-in's headers (refreshed first when ``rejected``, the access token the
        vendor just refused): a refused refresh token is the owner's one line."""
        assert self._signin is not None
        try:
            if rejected is not None:
                await self._signin.refresh(rejected)
            return await self._signin.headers()
        except SignInExpired as err:
            log.warning("relay %s: %s", self.harness, err)
            raise _Refused(401, "authentication_error", str(err)) from None
        except SignInError as err:
            raise _Refused(502, "relay_error", f"relay: {err}") from None

    def _signed_secrets(self) -> tuple[str, ...]:
        if self._signin is None:
            return ()
        try:
            return self._signin.secrets()
        except SignInError:
            return ()

    def _refuse(
        self, request: web.Request, model: str, started: float, refusal: _Refused
    ) -> web.Response:
        self._record(request, model, refusal.status, started, Usage(), error=refusal.message)
        return web.json_response(
            {
                "type": "error",
                "error": {"type": refusal.kind, "message": refusal.message},
            },
            status=refusal.status,
        )

    def _record(
        self,
        request: web.Request,
        model: str,
        status: int,
        started: float,
        usage: Usage,
        error: str = "",
        removed: list[str] | None = None,
    ) -> None:
        self.stats.calls += 1
        self.stats.tokens_in += usage.tokens_in
        self.stats.tokens_out += usage.tokens_out
        entry = {
            "ts": round(time.time(), 3),
            "harness": self.harness,
            "task": self.task_id,
            "provider": self.provider,
            "model": model,
            "path": request.path[:500],
            "status": status,
            "latency_ms": round((time.monotonic() - started) * 1000, 1),
            "tokens_in": usage.tokens_in,
            "tokens_out": usage.tokens_out,
        }
        if error:
            entry["error"] = error[:500]
        if removed:
            entry["removed"] = sorted(set(removed))
        self.stats.log.append(entry)
        if self.on_call is not None:
            try:
                self.on_call(entry)
            except Exception:  # the ledger must never break a model call
                log.exception("relay: recording the call's cost failed")
        try:
            self.log_path.parent.mkdir(parents=True, exist_ok=True)
            with self.log_path.open("a", encoding="utf-8") as fh:
                fh.write(json.dumps(entry) + "\n")
        except OSError as err:  # logging must never break a model call
            log.warning("relay log write failed: %s", err)


__all__ = ["PLACEHOLDER_KEY", "ModelRelay", "RelayLimits", "RelayStats"]
