"""The orchestrator model as a chain of OpenAI-compatible endpoints, with one policy.

Per call, the endpoints are tried in order:

* connection refused, a timeout, a 5xx, any other error status, or a 200 that is not a
  completion (an HTML page): the next endpoint;
* 401: that key is parked for good (said once, masked) and the endpoint's next key is
  tried; with none left, the next endpoint;
* 429: the endpoint's next key not yet limited during this call; when all are, wait what
  ``Retry-After`` asks (seconds or HTTP-date) or a capped, jittered backoff, at most
  ``model.max_retries`` times, then the next endpoint (also at once when the endpoint
  asks for longer than ``Backoff.max_wait``).

At most ``max_attempts`` requests and ``total_seconds`` per call; this policy alone
decides (one request is one POST: providers/wire.py, aiohttp, no SDK and no retries of
its own). Every request, good or failed,
is reported to ``on_attempt`` (the cost ledger). When every endpoint failed, ``ChainFailed``
names each one and what it answered.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from core.errors import FetchError
from orchestrator import completion
from orchestrator.agent.attached import for_endpoint
from orchestrator.providers import wire
from orchestrator.providers.backoff import Backoff, retry_after
from orchestrator.providers.keys import KeyRing
from orchestrator.providers.settings import ProviderEntry

if TYPE_CHECKING:
    import aiohttp
    from yarl import URL

    from orchestrator.config import ModelSettings

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Attempt:
    """One request to one endpoint, as the ledger records it."""

    provider: str
    model: str
    status: int  # HTTP status; 0 when none came
    error: str = ""
    latency_ms: float = 0.0
    tokens_in: int = 0
    tokens_out: int = 0


class ChainFailed(FetchError):
    """Every endpoint failed; ``tried`` has one "name: what it answered" per endpoint."""

    def __init__(self, tried: list[str], why: str = "", *, single: bool = False) -> None:
        self.tried = tried
        if single and len(tried) == 1 and not why:
            # One endpoint (today's model.base_url): worded as before the chain existed.
            text = "the orchestrator model endpoint " + tried[0].split(": ", 1)[-1]
        else:
            head = why or "every orchestrator model endpoint failed"
            text = f"{head}: " + "; ".join(tried) if tried else head
        super().__init__(text)


@dataclass
class Endpoint:
    name: str
    base_url: str
    model: str | None
    timeout: float
    keys: KeyRing
    images: bool = False  # sent image parts (else their words)
    # One connection pool per key (aiohttp, providers/wire.py), made on first use.
    clients: dict[str, aiohttp.ClientSession] = field(default_factory=dict)
    url: URL = field(init=False)
    proxy: URL | None = field(init=False)  # the environment's, read once (wire.route)

    def __post_init__(self) -> None:
        self.url = wire.completions_url(self.base_url)
        self.proxy = wire.route(self.url)

    def client(self, key: str) -> aiohttp.ClientSession:
        client = self.clients.get(key)
        if client is None or client.closed:
            client = self.clients[key] = wire.session()
        return client


def entries_of(settings: ModelSettings) -> tuple[ProviderEntry, ...]:
    """The configured chain; today's single ``base_url`` is a chain of one."""
    if settings.providers:
        return settings.providers
    if settings.base_url:
        keys = (settings.api_key,) if settings.api_key else ()
        return (
            ProviderEntry(
                name="default", base_url=settings.base_url, api_keys=keys, images=settings.images
            ),
        )
    return ()


class ProviderChain:
    def __init__(
        self,
        settings: ModelSettings,
        *,
        backoff: Backoff | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        monotonic: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,
    ) -> None:
        self.default_model = settings.name
        self.max_attempts = settings.max_attempts
        self.total_seconds = settings.total_seconds
        self.waits_per_endpoint = settings.max_retries
        self.backoff = backoff or Backoff()
        self._sleep, self._monotonic, self._wall = sleep, monotonic, wall
        self.endpoints = [
            Endpoint(
                e.name,
                e.base_url,
                e.model,
                e.timeout or settings.timeout_seconds,
                KeyRing(e.name, e.api_keys),
                e.images,
            )
            for e in entries_of(settings)
        ]

    @property
    def configured(self) -> bool:
        return bool(self.endpoints)

    async def warm(self) -> bool:
        """The first endpoint's connection opened before the first message needs it
        (``wire.preconnect``: nothing is sent). False when it could not be opened: the
        first message then connects, as it always did."""
        if not self.endpoints:
            return False
        endpoint = self.endpoints[0]
        key = endpoint.keys.current()
        if key is None:
            return False
        try:
            await wire.preconnect(
                endpoint.client(key), endpoint.url, endpoint.proxy, min(endpoint.timeout, 10.0)
            )
        except wire.WireError as err:
            log.debug("could not open a connection to %s ahead: %s", endpoint.name, err)
            return False
        return True

    async def close(self) -> None:
        for endpoint in self.endpoints:
            for client in endpoint.clients.values():
                await client.close()
            endpoint.clients.clear()

    def ordered(self, prefer: str | None) -> list[Endpoint]:
        """The endpoints in the order tried: ``prefer`` (a name) first, if it is one."""
        first = [e for e in self.endpoints if e.name == prefer]
        return first + [e for e in self.endpoints if e.name != prefer]

    def model_of(self, endpoint: Endpoint) -> str:
        return endpoint.model or self.default_model

    def status_lines(self) -> list[str]:
        return [line for e in self.endpoints if (line := e.keys.status())]

    async def complete(
        self,
        messages: list[Any],
        tools: list[dict[str, Any]] | None = None,
        *,
        model: str | None = None,
        on_attempt: Callable[[Attempt], None] | None = None,
        prefer: str | None = None,
    ) -> tuple[Any, Attempt]:
        """A chat completion from the first endpoint that gives one, and its attempt.

        When every endpoint failed with something that may pass (no answer, a timeout,
        5xx, 429, a page that is not a completion), the chain is tried again after a
        backoff, at most ``model.max_retries`` more rounds, within the bounds. ``prefer``:
        the entry a chat chose (/model), tried first; the others stay its fallbacks."""
        if not self.endpoints:
            raise ChainFailed([], "no orchestrator model is configured")
        call = _Call(self._monotonic() + self.total_seconds, messages, tools, model, on_attempt)
        said: dict[str, list[str]] = {e.name: [] for e in self.endpoints}
        for round_ in range(self.waits_per_endpoint + 1):
            if round_:
                wait = self.backoff.wait(round_, None) or 0.0
                if self._monotonic() + wait >= call.deadline:
                    break
                log.info("model endpoints all failed; trying again in %.1fs", wait)
                await self._sleep(wait)
            again = False
            for endpoint in self.ordered(prefer):
                try:
                    response, retryable = await self._endpoint(endpoint, call, said[endpoint.name])
                except _GaveUp as why:
                    raise ChainFailed(
                        _lines(said), f"the orchestrator model failed ({why})"
                    ) from None
                if response is not None:
                    return response
                again = again or retryable
            if not again:
                break
        raise ChainFailed(_lines(said), single=len(self.endpoints) == 1)

    async def _endpoint(
        self, endpoint: Endpoint, call: _Call, said: list[str]
    ) -> tuple[tuple[Any, Attempt] | None, bool]:
        """One endpoint, its keys in turn: the answer, or None and whether another round
        may help."""
        limited: set[str] = set()
        waits = 0
        while True:
            key = endpoint.keys.current()
            if key is None:
                said.append("every key parked (401)")
                return None, False
            remaining = call.deadline - self._monotonic()
            if call.count >= self.max_attempts or remaining <= 0:
                if not said:
                    said.append("not tried")
                raise _GaveUp(
                    f"gave up after {call.count} attempts"
                    if call.count >= self.max_attempts
                    else f"gave up after {self.total_seconds:g}s"
                )
            call.count += 1
            attempt, response, err = await self._once(
                endpoint,
                key,
                call.messages,
                call.tools,
                call.model,
                min(endpoint.timeout, remaining),
            )
            if call.on_attempt is not None:
                call.on_attempt(attempt)
            if response is not None:
                return (response, attempt), False
            said.append(endpoint.keys.label(key) + attempt.error)
            if attempt.status == 401:
                endpoint.keys.park(key, "HTTP 401 (unauthorised)")
                continue
            if attempt.status != 429:
                return None, attempt.status in (0, 200, 408) or attempt.status >= 500
            limited.add(key)
            fresh = [k for k in endpoint.keys.live if k not in limited]
            if fresh and endpoint.keys.rotate():
                while endpoint.keys.current() in limited:
                    endpoint.keys.rotate()
                continue
            waits += 1
            asked = retry_after(_headers(err), self._wall())
            wait = self.backoff.wait(waits, asked) if waits <= self.waits_per_endpoint else None
            if wait is None or self._monotonic() + wait >= call.deadline:
                if asked is not None and asked > self.backoff.max_wait:
                    said.append(f"asked to wait {asked:.0f}s")
                return None, False
            log.info("model provider %s: rate limited, waiting %.1fs", endpoint.name, wait)
            await self._sleep(wait)

    async def _once(
        self,
        endpoint: Endpoint,
        key: str,
        messages: list[Any],
        tools: list[dict[str, Any]] | None,
        model: str | None,
        seconds: float,
    ) -> tuple[Attempt, Any, BaseException | None]:
        timeout = seconds  # per request: to connect, and for each read
        name = model or endpoint.model or self.default_model
        started = self._monotonic()

        def attempt(status: int, error: str = "", usage: Any = None) -> Attempt:
            return Attempt(
                endpoint.name,
                name,
                status,
                error,
                round((self._monotonic() - started) * 1000, 1),
                int(getattr(usage, "prompt_tokens", 0) or 0),
                int(getattr(usage, "completion_tokens", 0) or 0),
            )

        # Image parts only to an endpoint that takes them (orchestrator/agent/attached.py).
        sent = for_endpoint(messages, endpoint.images)
        body: dict[str, Any] = {"model": name, "messages": sent}
        if tools:
            body["tools"] = tools
        try:
            response = await wire.post_completion(
                endpoint.client(key), endpoint.url, key, body, timeout, endpoint.proxy
            )
        except wire.TimedOut as err:
            return attempt(0, f"timed out after {timeout:g}s"), None, err
        except wire.Unreachable as err:
            return attempt(0, "could not be reached"), None, err
        except wire.StatusError as err:
            return attempt(err.status, f"answered HTTP {err.status}"), None, err
        except (ValueError, TypeError, KeyError, AttributeError) as err:
            # A 200 that could not be parsed (not JSON, not a completion's shape).
            return attempt(200, "answered something that is not a completion"), None, err
        wrong = completion.problem(response)
        if wrong is not None:
            return attempt(200, wrong.replace("the orchestrator model endpoint ", "")), None, None
        return attempt(200, usage=getattr(response, "usage", None)), response, None


@dataclass(slots=True)
class _Call:
    """One model call across its attempts."""

    deadline: float
    messages: list[Any]
    tools: list[dict[str, Any]] | None
    model: str | None
    on_attempt: Callable[[Attempt], None] | None
    count: int = 0  # requests made so far


class _GaveUp(Exception):
    """The attempts or the time of one call are used up."""


def _lines(said: dict[str, list[str]]) -> list[str]:
    return [f"{name}: {', '.join(parts)}" for name, parts in said.items() if parts]


def _headers(err: BaseException | None) -> dict[str, str] | None:
    return err.headers if isinstance(err, wire.StatusError) else None
