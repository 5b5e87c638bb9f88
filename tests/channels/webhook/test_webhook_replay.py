"""Issue 11.6: a signed webhook request is accepted once. Real HTTP, real signing: a
byte-for-byte replay inside the five-minute window is refused on both routes, and a
replay of ``/webhook/replies`` cannot drain the owner's mailbox (diff included)."""

from __future__ import annotations

import json
import time

import aiohttp

from channels.replay import ReplayGuard
from channels.webhook import SIGNATURE_HEADER, TIMESTAMP_HEADER, sign
from core.events import Outbound
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
    assert guard.first_use("a", stamp=1000, now=1000) is True
    assert guard.first_use("a", stamp=1000, now=1299) is False
    assert guard.first_use("b", stamp=1000, now=1299) is True
    # Full of live signatures: refuse rather than forget one (it would become replayable).
    assert guard.first_use("c", stamp=1100, now=1299) is None
    assert guard.first_use("a", stamp=1000, now=1302) is True  # expired, then seen anew
    assert len(guard) <= 2
