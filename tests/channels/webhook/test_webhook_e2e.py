"""The whole app behind the webhook channel: the real gateway answers through JSON, and
a replayed signed request is refused at the door (issue 11: accepted once)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable

import aiohttp

from channels.http import HttpServer
from channels.http_settings import HttpSettings
from channels.webhook import SIGNATURE_HEADER, TIMESTAMP_HEADER, WebhookChannel, sign
from channels.webhook_settings import WebhookSettings
from orchestrator.app import build_app
from orchestrator.config import Settings
from tests.channels.webhook.support import SECRET, Client


async def test_status_round_trip_and_replay_is_refused(
    make_settings: Callable[..., Settings],
) -> None:
    http = HttpServer(HttpSettings(port=0))
    channel = WebhookChannel(WebhookSettings(enabled=True, secret=SECRET), http, settle=0.3)
    async with build_app(make_settings(), channels=[channel]), http:
        client = Client(http.url)
        status, body = await client.post("/webhook", {"text": "/whoami", "wait": 10})
        assert status == 202 and len(body["replies"]) == 1
        assert body["replies"][0]["text"]

        # A captured request sent again, byte for byte, inside the five minutes.
        raw = json.dumps({"text": "/status", "wait": 1.5}).encode()
        ts = str(int(time.time()))
        headers = {
            TIMESTAMP_HEADER: ts,
            SIGNATURE_HEADER: sign(SECRET, ts, raw),
            "Content-Type": "application/json",
        }
        answers = []
        async with aiohttp.ClientSession() as s:
            for _ in range(2):
                async with s.post(http.url + "/webhook", data=raw, headers=headers) as r:
                    answers.append((r.status, await r.json()))
        (first_status, first), (second_status, second) = answers
        assert (first_status, second_status) == (202, 409)
        assert "Fetch ·" in first["replies"][0]["text"]
        assert "already accepted" in second["error"] and "replies" not in second
