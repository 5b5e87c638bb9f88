"""Issue 11.6: a signed webhook request is accepted once. Real HTTP, real signing: a
byte-for-byte replay inside the five-minute window is refused on both routes, and a
replay of ``/webhook/replies`` cannot drain the owner's mailbox (diff included).

Issue 26.5: polling is not a replay. The timestamp is the nonce: a client polling the
same body twice in one second signs a fractional timestamp and both polls pass, while a
captured request replayed is still refused; the replay cap is per client (chat), so one
chat's flood leaves another chat's requests alone."""

from __future__ import annotations

import json
import time

import aiohttp

from channels.http import HttpServer
from channels.http_settings import HttpSettings
from channels.replay import ReplayGuard
from channels.webhook import SIGNATURE_HEADER, TIMESTAMP_HEADER, WebhookChannel, sign
from channels.webhook_settings import WebhookSettings
from core.events import Outbound
from orchestrator.supervisor import TaskSupervisor
from tests.channels.telegram.support import RecordingSink
from tests.channels.webhook.support import SECRET, Hook


async def _send_raw(url: str, raw: bytes, ts: str) -> tuple[int, dict[str, object]]:
    headers = {
        TIMESTAMP_HEADER: ts,
        SIGNATURE_HEADER: sign(SECRET, ts, raw),
        "Content-Type": "application/json",
    }
    async with aiohttp.ClientSession() as s, s.post(url, data=raw, headers=headers) as r:
        return r.status, await r.json(content_type=None)


async def test_a_replayed_message_is_refused_and_not_delivered(hook: Hook) -> None:
    raw = json.dumps({"text": "/undo", "message_id": "m-1"}).encode()
    ts = str(int(time.time()))
    first = await _send_raw(hook.client.base_url + "/webhook", raw, ts)
    again = await _send_raw(hook.client.base_url + "/webhook", raw, ts)
    assert first[0] == 202 and again[0] == 409
    assert "already accepted" in str(again[1]["error"])
    assert [m.text for m in hook.sink.got] == ["/undo"]  # delivered once


async def test_a_replayed_replies_poll_cannot_drain_the_mailbox(hook: Hook) -> None:
    raw = json.dumps({"chat": "owner-phone"}).encode()
    ts = str(int(time.time()))
    status, body = await _send_raw(hook.client.base_url + "/webhook/replies", raw, ts)
    assert status == 200 and body["replies"] == []
    # The owner's diff arrives; the attacker replays the owner's captured (empty) poll.
    await hook.channel.send(Outbound("webhook", "owner-phone", "📝 diff… Apply? (yes/no)"))
    status, body = await _send_raw(hook.client.base_url + "/webhook/replies", raw, ts)
    assert status == 409 and "replies" not in body
    # The owner's own poll, signed anew (another second), still gets the diff.
    status, body = await hook.client.post(
        "/webhook/replies", {"chat": "owner-phone"}, stamp=int(ts) + 1
    )
    assert status == 200 and [r["text"] for r in body["replies"]] == ["📝 diff… Apply? (yes/no)"]


async def test_the_same_body_signed_anew_is_accepted(hook: Hook) -> None:
    body = {"text": "/status"}
    assert (await hook.client.post("/webhook", body, stamp=int(time.time())))[0] == 202
    assert (await hook.client.post("/webhook", body, stamp=int(time.time()) - 1))[0] == 202


def test_the_guard_forgets_a_signature_once_its_stamp_left_the_window() -> None:
    guard = ReplayGuard(window=300, capacity=2)
    assert guard.first_use("c1", "a", stamp=1000, now=1000) is True
    assert guard.first_use("c1", "a", stamp=1000, now=1299) is False
    assert guard.first_use("c1", "b", stamp=1000, now=1299) is True
    # Full of live signatures: refuse rather than forget one (it would become replayable).
    assert guard.first_use("c1", "c", stamp=1100, now=1299) is None
    assert guard.first_use("c1", "a", stamp=1000, now=1302) is True  # expired, then seen anew
    assert len(guard) <= 2


def test_the_guard_caps_each_client_apart_and_bounds_the_clients() -> None:
    guard = ReplayGuard(window=300, capacity=2, clients=2)
    assert guard.first_use("flood", "a", stamp=1000, now=1000) is True
    assert guard.first_use("flood", "b", stamp=1000, now=1000) is True
    assert guard.first_use("flood", "c", stamp=1000, now=1000) is None  # its own cap
    assert guard.first_use("phone", "a", stamp=1000, now=1000) is True  # another's is free
    assert guard.first_use("third", "x", stamp=1000, now=1000) is None  # clients bounded
    assert guard.first_use("third", "x", stamp=1000, now=1301) is True  # the others expired
    assert len(guard) == 1


async def test_polling_twice_in_one_second_is_not_a_replay(hook: Hook) -> None:
    raw = json.dumps({"chat": "poller"}).encode()
    second = int(time.time())
    await hook.channel.send(Outbound("webhook", "poller", "first reply"))
    # The same body twice within one second, each signed with its own fractional stamp.
    got = [
        await _send_raw(hook.client.base_url + "/webhook/replies", raw, f"{second}.{fraction}")
        for fraction in ("125000", "750000")
    ]
    assert [status for status, _ in got] == [200, 200]
    assert "first reply" in json.dumps(got[0][1]["replies"])
    # A captured poll, sent again byte for byte, is still refused.
    again = await _send_raw(hook.client.base_url + "/webhook/replies", raw, f"{second}.750000")
    assert again[0] == 409 and "fraction" in str(again[1]["error"])


async def test_a_captured_message_replayed_with_a_fractional_stamp_is_refused(
    hook: Hook,
) -> None:
    raw = json.dumps({"text": "yes", "chat": "phone"}).encode()
    ts = f"{time.time():.6f}"
    assert (await _send_raw(hook.client.base_url + "/webhook", raw, ts))[0] == 202
    assert (await _send_raw(hook.client.base_url + "/webhook", raw, ts))[0] == 409
    assert [m.text for m in hook.sink.got] == ["yes"]
    # Not a timestamp: refused before anything is recorded.
    status, body = await _send_raw(hook.client.base_url + "/webhook", raw, "12e3")
    assert status == 401 and "unix seconds" in str(body["error"])


async def test_one_chats_flood_cannot_fill_anothers_cap() -> None:
    # A cap of 20 a chat so the flood is quick; the same channel and listener otherwise.
    http = HttpServer(HttpSettings(port=0))
    channel = WebhookChannel(
        WebhookSettings(enabled=True, secret=SECRET), http, settle=0.2, replay_capacity=20
    )
    await channel.start(RecordingSink(), TaskSupervisor())
    await http.start()
    try:
        url = http.url + "/webhook/replies"
        now = int(time.time())
        flood = [
            (await _send_raw(url, json.dumps({"chat": "flood"}).encode(), f"{now}.{i:06d}"))[0]
            for i in range(25)
        ]
        assert flood.count(200) == 20 and flood[20:] == [429] * 5
        status, _body = await _send_raw(url, json.dumps({"chat": "phone"}).encode(), f"{now}.5")
        assert status == 200  # the owner's phone is not refused for the flood's sake
        body = json.dumps({"text": "/status", "chat": "phone"}).encode()
        assert (await _send_raw(http.url + "/webhook", body, f"{now}.6"))[0] == 202
    finally:
        await http.stop()
        await channel.stop()
