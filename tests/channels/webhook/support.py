"""A signing client for the webhook channel, as a script would do it."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

import aiohttp

from channels.webhook import (
    SIGNATURE_HEADER,
    TIMESTAMP_HEADER,
    WebhookChannel,
    sign,
)
from tests.channels.telegram.support import RecordingSink

SECRET = "0123456789abcdef-test-secret"


class Client:
    def __init__(self, base_url: str, secret: str = SECRET) -> None:
        self.base_url, self.secret = base_url, secret

    async def post(
        self,
        path: str,
        body: Any = None,
        *,
        raw: bytes | None = None,
        secret: str | None = None,
        stamp: int | None = None,
        signature: str | None = None,
        omit: tuple[str, ...] = (),
    ) -> tuple[int, Any]:
        data = raw if raw is not None else json.dumps(body).encode()
        ts = str(stamp if stamp is not None else int(time.time()))
        sent = {
            TIMESTAMP_HEADER: ts,
            "Content-Type": "application/json",
            SIGNATURE_HEADER: signature
            if signature is not None
            else sign(secret or self.secret, ts, data),
        }
        sent = {k: v for k, v in sent.items() if k not in omit}
        async with (
            aiohttp.ClientSession() as session,
            session.post(self.base_url + path, data=data, headers=sent) as resp,
        ):
            return resp.status, await resp.json(content_type=None)


@dataclass
class Hook:
    channel: WebhookChannel
    sink: RecordingSink
    client: Client
