"""One OpenAI-compatible chat completion over HTTP (aiohttp), without the openai SDK.

The chain used the SDK's client for one POST. Importing the SDK costs ~0.5 s of CPU and
~40 MB, so a first message after start either imported it on the event loop or waited
for a thread that did; and its ``chat.completions.create`` walked every message and tool
schema against its TypedDicts before sending the JSON it was given: two thirds of a
model message's CPU. aiohttp is already loaded (the HTTP listener), so this module sends
the same request and reads the answer the way the SDK did:

* the body as the SDK encoded it (compact JSON, UTF-8), ``Authorization: Bearer <key>``
  (``not-needed`` for an endpoint without a key, as before), the per-request timeout
  for connecting and for each read;
* a status outside 2xx: ``StatusError`` (its headers kept for ``Retry-After``); no answer:
  ``Unreachable``; too slow: ``TimedOut``;
* a 2xx body: JSON when it parses (a JSON content type that does not parse is a
  ``ValueError``, as the SDK raised), else the text itself (an HTML page), which
  ``orchestrator/completion.py`` words for the owner.

A parsed answer is a ``Node``: attribute access over the JSON (``response.choices[0]
.message.tool_calls``), a missing field reads as None, as the SDK's models did, and
``model_dump(exclude_none=True)`` gives the JSON back.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from typing import Any

import aiohttp
from yarl import URL

# Data, not structure: a tool call's arguments (a string, or an object from a lax
# server, which completion.normalise_arguments turns into its string), a message's
# content (a string, or a list of parts) and an error object in a 200 (which
# completion.problem reads as a dict) are handed over as they came, as the SDK did.
RAW = frozenset({"arguments", "content", "error"})
USER_AGENT = "fetch-assistant (openai-compatible)"


class WireError(Exception):
    """A request that got no usable HTTP answer, or an error status."""


class Unreachable(WireError):
    """Connection refused or reset, DNS, a broken response: no answer."""


class TimedOut(WireError):
    """No answer within the request's timeout."""


class StatusError(WireError):
    def __init__(self, status: int, headers: Mapping[str, str]) -> None:
        super().__init__(f"HTTP {status}")
        self.status = status
        self.headers = dict(headers)


class Node:
    """Attribute access over one JSON object of an answer; see the module docstring."""

    __slots__ = ("_data",)

    def __init__(self, data: dict[str, Any]) -> None:
        object.__setattr__(self, "_data", data)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        value = self._data.get(name)
        return value if name in RAW else _wrap(value)

    def __setattr__(self, name: str, value: Any) -> None:
        self._data[name] = value

    def model_dump(self, *, exclude_none: bool = False) -> dict[str, Any]:
        dumped: dict[str, Any] = _dump(self._data, exclude_none)
        return dumped

    def __repr__(self) -> str:
        return f"Node({self._data!r})"


def _wrap(value: Any) -> Any:
    if isinstance(value, dict):
        return Node(value)
    if isinstance(value, list):
        return [_wrap(v) for v in value]
    return value


def _dump(value: Any, exclude_none: bool) -> Any:
    if isinstance(value, dict):
        return {
            k: _dump(v, exclude_none) for k, v in value.items() if not (exclude_none and v is None)
        }
    if isinstance(value, list):
        return [_dump(v, exclude_none) for v in value]
    return value


def _content_type(header: str) -> tuple[str, str]:
    """(media type, charset) of a Content-Type header: read here in a split, not by
    aiohttp's ``charset`` (the email package's header parser, on every answer)."""
    kind, *params = header.split(";")
    charset = "utf-8"
    for param in params:
        name, _, value = param.partition("=")
        if name.strip().lower() == "charset" and value.strip():
            charset = value.strip().strip('"')
    return kind.strip().lower(), charset


def encode(body: dict[str, Any]) -> bytes:
    """The request body, byte for byte as the SDK (httpx) encoded it."""
    return json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()


def completions_url(base_url: str) -> URL:
    """``base_url``/chat/completions, parsed once per endpoint (at start): a request
    reuses it, and the first one does not pay yarl's first host encoding (~8 ms)."""
    return URL(base_url.rstrip("/") + "/chat/completions")


def route(url: URL) -> URL | None:
    """The proxy the environment names for ``url`` (HTTP(S)_PROXY, NO_PROXY; its
    credentials from its URL or ~/.netrc, kept in the URL it returns), as they applied to
    the SDK's client, read once per endpoint: aiohttp's ``trust_env`` reads them again on
    every request, in two trips to a worker thread (the first message after start paid
    most of its time there). None: straight there."""
    from aiohttp.helpers import get_env_proxy_for_url

    try:
        proxy, auth = get_env_proxy_for_url(url)
    except LookupError:  # none named, or NO_PROXY covers the host
        return None
    if auth is not None:  # aiohttp sends a proxy URL's user as Proxy-Authorization
        proxy = proxy.with_user(auth.login).with_password(auth.password)
    return proxy


async def preconnect(
    http: aiohttp.ClientSession, url: URL, proxy: URL | None, seconds: float
) -> None:
    """Open ``http``'s first connection to ``url`` (TCP, and TLS for https), sending
    nothing: the first model message after start then reuses it as a warm one does,
    instead of paying the handshake (to a hosted provider, most of that message's wait).
    The connection is made for the request a completion makes (same host, TLS and proxy,
    so the pool's key matches) and put back in the pool unused."""
    from aiohttp.client_reqrep import ClientRequest

    request = ClientRequest("POST", url, loop=asyncio.get_running_loop(), proxy=proxy, session=http)
    limits = aiohttp.ClientTimeout(total=seconds, sock_connect=seconds)
    try:
        connection = await http.connector.connect(request, [], limits)  # type: ignore[union-attr]
    except TimeoutError as err:
        raise TimedOut(str(err)) from err
    except (OSError, aiohttp.ClientError, ValueError) as err:
        raise Unreachable(str(err) or type(err).__name__) from err
    connection.release()


def session() -> aiohttp.ClientSession:
    """One endpoint key's connection pool; its proxy is the endpoint's ``route``."""
    return aiohttp.ClientSession(trust_env=False, headers={"User-Agent": USER_AGENT})


async def post_completion(
    http: aiohttp.ClientSession,
    url: URL,
    key: str,
    body: dict[str, Any],
    seconds: float,
    proxy: URL | None = None,
) -> Any:
    """POST ``body`` to ``url`` (``completions_url``); the parsed answer (see the module
    docstring), or WireError / ValueError. ``seconds``: to connect, and for each read
    (the SDK's per-request timeout; the chain keeps the call's overall deadline)."""
    headers = {
        "Authorization": f"Bearer {key or 'not-needed'}",  # Ollama/vLLM accept anything
        "Content-Type": "application/json",
        "Accept": "application/json",
    }
    limits = aiohttp.ClientTimeout(total=None, sock_connect=seconds, sock_read=seconds)
    try:
        async with http.post(
            url,
            data=encode(body),
            headers=headers,
            timeout=limits,
            proxy=proxy,
        ) as answer:
            raw = await answer.read()
            status, answer_headers = answer.status, answer.headers
            kind, charset = _content_type(answer.headers.get("Content-Type", "*"))
    except TimeoutError as err:  # aiohttp's ServerTimeoutError is one too: first
        raise TimedOut(str(err)) from err
    except aiohttp.ClientError as err:
        raise Unreachable(str(err) or type(err).__name__) from err
    if not 200 <= status < 300:
        raise StatusError(status, answer_headers)
    try:
        text = raw.decode(charset, errors="replace")
    except LookupError:  # a charset Python does not know
        text = raw.decode("utf-8", errors="replace")
    if kind.endswith("json"):
        return _wrap(json.loads(text))  # not JSON after all: ValueError, as the SDK's
    try:
        return _wrap(json.loads(text))
    except ValueError:
        return text  # an HTML page, plain text: completion.problem says which


__all__ = [
    "Node",
    "StatusError",
    "TimedOut",
    "Unreachable",
    "WireError",
    "completions_url",
    "encode",
    "post_completion",
    "preconnect",
    "route",
    "session",
]
