"""The provider chain through real HTTP: scripted OpenAI-compatible servers on 127.0.0.1
that fail in the ways real endpoints do, the real openai SDK in between. Waits are
taken by an injected sleep (asserted, never slept)."""

from __future__ import annotations

import logging
import socket
import time
from collections.abc import AsyncIterator
from email.utils import formatdate

import pytest

from orchestrator.config import ModelSettings
from orchestrator.providers.backoff import Backoff, retry_after
from orchestrator.providers.chain import Attempt, ChainFailed, ProviderChain
from orchestrator.providers.settings import ProviderEntry
from tests.fakes.model_server import Error, Garbage, Hang, ScriptedModelServer, Text

HELLO = [{"role": "user", "content": "hello"}]


@pytest.fixture
async def first() -> AsyncIterator[ScriptedModelServer]:
    async with ScriptedModelServer() as srv:
        yield srv


@pytest.fixture
async def second() -> AsyncIterator[ScriptedModelServer]:
    async with ScriptedModelServer() as srv:
        yield srv


def _closed_port() -> str:
    """A loopback URL nothing listens on (connection refused)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


class Sleeps:
    def __init__(self) -> None:
        self.waits: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)


def _chain(*entries: ProviderEntry, sleeps: Sleeps | None = None, **kw: object) -> ProviderChain:
    settings = ModelSettings(name="gpt-4o", providers=entries, **kw)
    return ProviderChain(settings, sleep=sleeps or Sleeps(), backoff=Backoff(rand=lambda: 0.5))


def _entry(name: str, url: str, *keys: str, **kw: object) -> ProviderEntry:
    return ProviderEntry(name=name, base_url=url, api_keys=keys, **kw)


async def test_the_first_endpoint_that_answers_is_used_in_order(
    first: ScriptedModelServer, second: ScriptedModelServer
) -> None:
    first.script(Error(500, "boom"))
    second.script(Text("from the second"))
    seen: list[Attempt] = []
    chain = _chain(
        _entry("down", _closed_port()),
        _entry("broken", first.url + "/v1"),
        _entry("good", second.url + "/v1", model="gpt-4o-mini"),
    )
    try:
        response, used = await chain.complete(HELLO, on_attempt=seen.append)
    finally:
        await chain.close()
    assert response.choices[0].message.content == "from the second"
    assert [(a.provider, a.status) for a in seen] == [("down", 0), ("broken", 500), ("good", 200)]
    assert used.provider == "good" and used.model == "gpt-4o-mini"  # the entry's own model
    assert used.tokens_in > 0 and used.tokens_out > 0
    assert second.model_requests[0].body is not None
    assert second.model_requests[0].body["model"] == "gpt-4o-mini"
    assert first.model_requests[0].body is not None
    assert first.model_requests[0].body["model"] == "gpt-4o"  # model.name by default


async def test_a_timeout_and_an_html_page_fall_through(
    first: ScriptedModelServer, second: ScriptedModelServer
) -> None:
    first.script(Hang(30))
    second.script(Garbage(b"<html><body>login</body></html>", "text/html"))
    chain = _chain(
        _entry("slow", first.url + "/v1", timeout=0.3),
        _entry("portal", second.url + "/v1"),
        max_retries=0,
    )
    started = time.monotonic()
    with pytest.raises(ChainFailed) as failed:
        await chain.complete(HELLO)
    await chain.close()
    assert time.monotonic() - started < 10
    text = str(failed.value)
    assert "slow: timed out after 0.3s" in text
    assert "portal: answered an HTML page" in text


async def test_401_parks_the_key_and_the_next_key_answers(
    first: ScriptedModelServer, caplog: pytest.LogCaptureFixture
) -> None:
    first.require_key("sk-second-key-0002")
    first.script(Text("ok"), Text("again"))
    chain = _chain(_entry("openai", first.url + "/v1", "sk-first-key-0001", "sk-second-key-0002"))
    with caplog.at_level(logging.WARNING):
        response, _ = await chain.complete(HELLO)
        assert response.choices[0].message.content == "ok"
        await chain.complete(HELLO)  # the parked key is not tried again
    await chain.close()
    auth = [r.headers["authorization"] for r in first.model_requests]
    assert auth == ["Bearer sk-first-key-0001"] + ["Bearer sk-second-key-0002"] * 2
    parked = [r.getMessage() for r in caplog.records if "parked" in r.getMessage()]
    assert len(parked) == 1 and "key 1 (sk-f…0001)" in parked[0]
    assert "sk-first-key-0001" not in caplog.text  # never printed whole
    assert chain.status_lines() == [
        "openai: 1 of 2 keys usable (key 1 (sk-f…0001): HTTP 401 (unauthorised))"
    ]


async def test_every_key_401_falls_to_the_next_endpoint(
    first: ScriptedModelServer, second: ScriptedModelServer
) -> None:
    first.require_key("nobody-has-this")
    second.script(Text("backup"))
    chain = _chain(
        _entry("primary", first.url + "/v1", "sk-aaaa-1111", "sk-bbbb-2222"),
        _entry("backup", second.url + "/v1"),
    )
    response, used = await chain.complete(HELLO)
    await chain.close()
    assert response.choices[0].message.content == "backup" and used.provider == "backup"
    assert len(first.model_requests) == 2


async def test_429_waits_what_retry_after_asks_then_succeeds(first: ScriptedModelServer) -> None:
    first.script(Error(429, "slow down", (("Retry-After", "1"),)), Text("after the wait"))
    sleeps = Sleeps()
    chain = _chain(_entry("one", first.url + "/v1", "sk-only-key-1"), sleeps=sleeps)
    started = time.monotonic()
    response, _ = await chain.complete(HELLO)
    await chain.close()
    assert response.choices[0].message.content == "after the wait"
    assert len(sleeps.waits) == 1 and 1.0 <= sleeps.waits[0] <= 1.1  # honoured, small jitter
    assert time.monotonic() - started < 1.0  # the injected sleep took it, not the wall


async def test_429_rotates_to_a_key_not_yet_limited_before_waiting(
    first: ScriptedModelServer,
) -> None:
    first.script(Error(429, "limited"), Text("second key"))
    sleeps = Sleeps()
    chain = _chain(_entry("one", first.url + "/v1", "sk-key-aaaa1", "sk-key-bbbb2"), sleeps=sleeps)
    response, _ = await chain.complete(HELLO)
    await chain.close()
    assert response.choices[0].message.content == "second key"
    assert sleeps.waits == []
    auth = [r.headers["authorization"] for r in first.model_requests]
    assert auth == ["Bearer sk-key-aaaa1", "Bearer sk-key-bbbb2"]


async def test_429_without_retry_after_backs_off_exponentially_then_moves_on(
    first: ScriptedModelServer, second: ScriptedModelServer
) -> None:
    first.script(*[Error(429, "limited")] * 3)
    second.script(Text("elsewhere"))
    sleeps = Sleeps()
    chain = _chain(
        _entry("busy", first.url + "/v1"),
        _entry("spare", second.url + "/v1"),
        sleeps=sleeps,
        max_retries=2,
    )
    response, _ = await chain.complete(HELLO)
    await chain.close()
    assert response.choices[0].message.content == "elsewhere"
    # base 0.5 then 1.0, equal jitter at rand=0.5: three quarters of each
    assert sleeps.waits == [0.375, 0.75]
    assert len(first.model_requests) == 3


async def test_a_retry_after_too_long_is_not_waited(
    first: ScriptedModelServer, second: ScriptedModelServer
) -> None:
    first.script(Error(429, "come back in an hour", (("Retry-After", "3600"),)))
    second.script(Text("spare"))
    sleeps = Sleeps()
    chain = _chain(_entry("a", first.url + "/v1"), _entry("b", second.url + "/v1"), sleeps=sleeps)
    await chain.complete(HELLO)
    await chain.close()
    assert sleeps.waits == []


async def test_attempts_are_bounded_and_the_error_names_each_endpoint(
    first: ScriptedModelServer, second: ScriptedModelServer
) -> None:
    first.script(Error(503, "overloaded"))
    second.script(Error(400, "bad model"))
    chain = _chain(
        _entry("a", first.url + "/v1"),
        _entry("b", second.url + "/v1"),
        _entry("c", _closed_port()),
        max_retries=0,
    )
    with pytest.raises(ChainFailed) as failed:
        await chain.complete(HELLO)
    assert str(failed.value) == (
        "every orchestrator model endpoint failed: a: answered HTTP 503; "
        "b: answered HTTP 400; c: could not be reached"
    )
    first.script(*[Error(500)] * 5)
    bounded = _chain(
        _entry("a", first.url + "/v1"), _entry("b", second.url + "/v1"), max_attempts=1
    )
    try:
        with pytest.raises(ChainFailed) as gave_up:
            await bounded.complete(HELLO)
    finally:
        await chain.close()
        await bounded.close()
    assert str(gave_up.value) == (
        "the orchestrator model failed (gave up after 1 attempts): a: answered HTTP 500; "
        "b: not tried"
    )


def test_retry_after_reads_seconds_dates_and_milliseconds() -> None:
    now = 1_700_000_000.0
    assert retry_after({"Retry-After": "2"}, now) == 2.0
    assert retry_after({"retry-after": formatdate(now + 5, usegmt=True)}, now) == 5.0
    assert retry_after({"retry-after-ms": "1500"}, now) == 1.5
    assert retry_after({"Retry-After": "soon"}, now) is None
    assert retry_after({"Retry-After": formatdate(now - 60, usegmt=True)}, now) == 0.0
    assert retry_after(None, now) is None


def test_settings_are_strict_and_never_echo_a_key() -> None:
    with pytest.raises(ValueError, match=r"either model\.base_url"):
        ModelSettings(base_url="http://x/v1", providers=(_entry("a", "http://y/v1"),))
    with pytest.raises(ValueError, match="must differ"):
        ModelSettings(providers=(_entry("a", "http://y/v1"), _entry("a", "http://z/v1")))
    with pytest.raises(ValueError, match="either api_key or api_keys"):
        ProviderEntry.model_validate(
            {"name": "a", "base_url": "http://y", "api_key": "k", "api_keys": ["j"]}
        )
    one = ProviderEntry.model_validate({"name": "a", "base_url": "http://y", "api_key": "k"})
    assert one.api_keys == ("k",)


async def test_when_every_endpoint_failed_the_chain_is_tried_again_after_a_backoff(
    first: ScriptedModelServer, second: ScriptedModelServer
) -> None:
    first.script(Error(502, "bad gateway"), Error(502, "still"))
    second.script(Error(500, "down"), Text("second round"))
    sleeps = Sleeps()
    chain = _chain(_entry("a", first.url + "/v1"), _entry("b", second.url + "/v1"), sleeps=sleeps)
    try:
        response, used = await chain.complete(HELLO)
    finally:
        await chain.close()
    assert response.choices[0].message.content == "second round" and used.provider == "b"
    assert sleeps.waits == [0.375]  # one backoff between the rounds
    assert (len(first.model_requests), len(second.model_requests)) == (2, 2)


async def test_a_request_error_is_not_tried_again(first: ScriptedModelServer) -> None:
    first.script(Error(400, "bad request"))
    sleeps = Sleeps()
    chain = _chain(_entry("a", first.url + "/v1"), sleeps=sleeps)
    try:
        with pytest.raises(ChainFailed, match=r"endpoint answered HTTP 400$"):
            await chain.complete(HELLO)
    finally:
        await chain.close()
    assert sleeps.waits == [] and len(first.model_requests) == 1
