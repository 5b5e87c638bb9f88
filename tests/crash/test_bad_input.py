"""Input decoding never kills a reader (issue 12): a line that is not UTF-8 on the real
``fetch``'s terminal, a lone surrogate in the webhook's JSON over real HTTP and in a
Telegram update from the fake Bot API. Each gets a clear answer, and the next message
is served."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

from channels.http import HttpServer
from channels.http_settings import HttpSettings
from channels.telegram import TelegramChannel
from channels.telegram.channel import Backoff
from channels.webhook import WebhookChannel
from channels.webhook_settings import WebhookSettings
from orchestrator.app import build_app
from orchestrator.config import Settings
from tests.channels.telegram.support import OWNER, settings_for
from tests.channels.webhook.support import SECRET, Client
from tests.cli.test_fetch_command import STARTUP, _env, _fetch_executable
from tests.fakes.telegram_api import FakeTelegramApi


def test_a_line_that_is_not_utf8_is_refused_and_the_terminal_keeps_reading(
    tmp_path: Path,
) -> None:
    typed = b"/remember caf\xe9 in latin-1\n/remember plain words\n/memory\n"
    done = subprocess.run(
        [_fetch_executable()],
        input=typed,
        env=_env(tmp_path / "home"),
        cwd=tmp_path,
        capture_output=True,
        timeout=STARTUP,
    )
    out = done.stdout.decode()
    assert done.returncode == 0, done.stderr.decode()
    assert "I couldn't read that line: it is not UTF-8" in out, out
    assert "Remembered #1" in out  # the next line, served
    assert "1 memories" in out and "plain words" in out and "caf" not in out
    assert "Traceback" not in out + done.stderr.decode()


async def test_a_lone_surrogate_on_the_webhook_is_refused_clearly(
    make_settings: Callable[..., Settings],
) -> None:
    http = HttpServer(HttpSettings(port=0))
    channel = WebhookChannel(WebhookSettings(enabled=True, secret=SECRET), http, settle=0.3)
    async with build_app(make_settings(), channels=[channel]), http:
        client = Client(http.url)
        raw = b'{"text": "/remember x \\ud800 y", "wait": 5}'
        status, body = await client.post("/webhook", raw=raw)
        assert status == 400, body
        assert "not valid Unicode (a lone surrogate at character 12)" in body["error"]
        status, body = await client.post("/webhook", {"text": "/remember fine", "wait": 10})
        assert status == 202 and "Remembered #1" in body["replies"][0]["text"]


async def test_a_lone_surrogate_from_telegram_is_replaced_and_served(
    tg: FakeTelegramApi,
    make_settings: Callable[..., Settings],
) -> None:
    channel = TelegramChannel(settings_for(tg), poll_timeout=1, backoff=Backoff(0.05, 0.2))
    async with build_app(make_settings(), channels=[channel]):
        tg.push_message("/remember x \ud800 y", chat_id=OWNER, from_id=OWNER)
        said = await tg.wait_for_text("Remembered #1", timeout=30)
        assert "Remembered #1" in said.text
        tg.push_message("/memory", chat_id=OWNER, from_id=OWNER)
        listed = await tg.wait_for_text("1 memories", timeout=30)
        assert "x \ufffd y" in listed.text
