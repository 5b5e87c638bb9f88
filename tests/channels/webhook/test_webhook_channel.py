"""The signed JSON webhook over real HTTP: what is accepted, what is refused, and how
replies come back."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest

from channels.http import HttpServer
from channels.http_settings import HttpSettings
from channels.webhook import (
    SIGNATURE_HEADER,
    TIMESTAMP_HEADER,
    WebhookChannel,
    sign,
)
from channels.webhook_settings import WebhookSettings
from core.errors import ConfigError
from core.events import Outbound
from orchestrator.supervisor import TaskSupervisor
from tests.channels.telegram.support import RecordingSink
from tests.channels.webhook.support import SECRET, Client, Hook


async def answer_each(hook: Hook, *replies: str) -> None:
    """Play the core: answer the next inbound with ``replies``."""
    inbound = await hook.sink.next()
    for text in replies:
        await hook.channel.send(
            Outbound("webhook", inbound.chat, text, reply_to=inbound.message_id)
        )


async def test_good_signature_delivers_and_returns_the_replies(hook: Hook) -> None:
    core = asyncio.create_task(answer_each(hook, "on it", "done: 3 files"))
    status, body = await hook.client.post(
        "/webhook", {"text": "/status", "chat": "phone", "message_id": "m1", "wait": 5}
    )
    await core
    assert status == 202
    assert (body["accepted"], body["message_id"], body["chat"]) == (True, "m1", "phone")
    assert [r["text"] for r in body["replies"]] == ["on it", "done: 3 files"]
    assert body["replies"][0]["reply_to"] == "m1"
    [inbound] = hook.sink.got
    assert (inbound.channel, inbound.chat, inbound.text) == ("webhook", "phone", "/status")
    assert inbound.from_owner and inbound.sender == "webhook" and not inbound.is_group


async def test_without_wait_replies_are_fetched_later(hook: Hook) -> None:
    status, body = await hook.client.post("/webhook", {"text": "long task"})
    assert status == 202 and body["replies"] == [] and body["chat"] == "webhook"
    assert body["message_id"].startswith("sig-")  # derived: a replay carries the same id
    poll = asyncio.create_task(hook.client.post("/webhook/replies", {"wait": 5}))
    await asyncio.sleep(0.1)
    assert not poll.done()  # a long poll: it waits for the reply
    await answer_each(hook, "📝 diff… Apply? (yes/no)")
    status, body = await poll
    assert status == 200 and [r["text"] for r in body["replies"]] == ["📝 diff… Apply? (yes/no)"]
    # Handed out once.
    assert (await hook.client.post("/webhook/replies", {}))[1]["replies"] == []


async def test_replies_stay_in_their_chat(hook: Hook) -> None:
    await hook.channel.send(Outbound("webhook", "a", "for a"))
    await hook.channel.send(Outbound("webhook", "b", "for b"))
    _s, body = await hook.client.post("/webhook/replies", {"chat": "b"})
    assert [r["text"] for r in body["replies"]] == ["for b"]


@pytest.mark.parametrize(
    "how",
    ["wrong secret", "no signature", "no timestamp", "tampered body", "stale", "future", "not hex"],
)
async def test_bad_signature_is_401_and_nothing_is_delivered(hook: Hook, how: str) -> None:
    body = {"text": "rm -rf /"}
    now = int(time.time())
    if how == "wrong secret":
        got = await hook.client.post("/webhook", body, secret="not-the-secret-at-all")
    elif how == "no signature":
        got = await hook.client.post("/webhook", body, omit=(SIGNATURE_HEADER,))
    elif how == "no timestamp":
        got = await hook.client.post("/webhook", body, omit=(TIMESTAMP_HEADER,))
    elif how == "tampered body":
        good = sign(SECRET, str(now), b'{"text": "hello"}')
        got = await hook.client.post("/webhook", body, stamp=now, signature=good)
    elif how == "stale":
        got = await hook.client.post("/webhook", body, stamp=now - 310)
    elif how == "future":
        got = await hook.client.post("/webhook", body, stamp=now + 310)
    else:
        got = await hook.client.post("/webhook", body, signature="sha256=ünïcode")
    status, answer = got
    assert status == 401 and "error" in answer
    await hook.sink.nothing(0.1)
    # The replies route is guarded the same way.
    assert (await hook.client.post("/webhook/replies", {}, secret="nope-nope-nope"))[0] == 401


async def test_oversized_body_is_413(hook: Hook) -> None:
    status, answer = await hook.client.post("/webhook", {"text": "x" * 5000})
    assert status == 413 and "2048 bytes" in answer["error"]

    async def chunks() -> AsyncIterator[bytes]:
        for _ in range(10):
            yield b"x" * 1000

    # No Content-Length (chunked): cut off at the limit all the same.
    async with (
        aiohttp.ClientSession() as s,
        s.post(hook.client.base_url + "/webhook", data=chunks()) as r,
    ):
        assert r.status == 413
    await hook.sink.nothing(0.1)


@pytest.mark.parametrize(
    ("raw", "needle"),
    [
        (b"{not json", "not valid JSON"),
        (b"\xff\xfe", "not valid JSON"),
        (b"[1, 2]", "JSON object"),
        (b'{"chat": "x"}', "'text'"),
        (b'{"text": "   "}', "'text'"),
        (b'{"text": 5}', "'text'"),
        (b'{"text": "hi", "chat": 7}', "'chat'"),
        (b'{"text": "hi", "chat": "../../etc"}', "'chat'"),
        (b'{"text": "hi", "sender": "' + b"x" * 65 + b'"}', "'sender'"),
        (b'{"text": "hi", "message_id": "has space"}', "'message_id'"),
        (b'{"text": "hi", "wait": "soon"}', "'wait'"),
        (b'{"text": "hi", "wait": 3600}', "'wait'"),
    ],
)
async def test_malformed_json_is_400_with_a_clear_message(
    hook: Hook,
    raw: bytes,
    needle: str,
) -> None:
    status, answer = await hook.client.post("/webhook", raw=raw)
    assert status == 400 and needle in answer["error"]
    await hook.sink.nothing(0.05)


async def test_not_running_is_503() -> None:
    http = HttpServer(HttpSettings(port=0))
    WebhookChannel(WebhookSettings(secret=SECRET), http)
    async with http:
        status, _ = await Client(http.url).post("/webhook", {"text": "hi"})
    assert status == 503


def test_a_weak_secret_refuses_to_start() -> None:
    http = HttpServer(HttpSettings(port=0))
    for secret in (None, "", "short"):
        with pytest.raises(ConfigError, match="16"):
            WebhookChannel(WebhookSettings(secret=secret), http)
    # fetch.env.example's own value is public: it would make anyone the owner.
    example = next(
        line.split("=", 1)[1].strip()
        for line in (Path(__file__).parents[3] / "fetch.env.example").read_text().splitlines()
        if line.startswith("FETCH_WEBHOOK_SECRET=")
    )
    with pytest.raises(ConfigError, match="not the example's"):
        WebhookChannel(WebhookSettings(secret=example), http)


async def test_stopping_answers_pending_long_polls_at_once() -> None:
    http = HttpServer(HttpSettings(port=0), shutdown_timeout=20)
    channel = WebhookChannel(WebhookSettings(secret=SECRET), http)
    await channel.start(RecordingSink(), TaskSupervisor())
    await http.start()
    poll = asyncio.create_task(Client(http.url).post("/webhook/replies", {"wait": 60}))
    await asyncio.sleep(0.2)
    loop = asyncio.get_running_loop()
    started = loop.time()
    await http.stop()  # the composition root stops the listener before the channels
    await channel.stop()
    assert loop.time() - started < 5
    assert await poll == (200, {"chat": "webhook", "replies": []})
