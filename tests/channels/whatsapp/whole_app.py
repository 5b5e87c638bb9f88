"""The whole app with one WhatsApp channel over ``FakeWhatsAppClient``: for tests (and the
flood bench) that go through the real adapter end to end."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from channels.whatsapp import WhatsAppChannel
from core.gate import AllowlistGate
from orchestrator.app import App, build_app
from orchestrator.config import Settings

from .builders import OWNER
from .fake_client import FakeWhatsAppClient

# The owner on WhatsApp, sends unpaced, and the owner's direct chat needs no trigger.
OWNER_DIRECT: dict[str, str] = {
    "FETCH__WHATSAPP__ENABLED": "true",
    "FETCH_WHATSAPP_OWNER": f"+{OWNER}",  # a fictional number: written with its +
    "FETCH__WHATSAPP__MIN_SEND_INTERVAL_SECONDS": "0",
    "FETCH__WHATSAPP__TRIGGER_IN_DIRECT_CHAT": "false",
}


def whatsapp_channel(settings: Settings, client: FakeWhatsAppClient) -> WhatsAppChannel:
    """The channel as the app wires it: the settings' trigger, allowlist gate and audio limit."""
    return WhatsAppChannel(
        settings.whatsapp,
        settings.home_dir,
        client=client,
        trigger=settings.gateway.trigger,
        gate=AllowlistGate(settings.allowlist),
        max_audio_seconds=settings.transcription.max_seconds,
    )


async def start_app(settings: Settings, client: FakeWhatsAppClient) -> App:
    """The app entered with that one channel; the caller exits it."""
    app = build_app(settings, channels=[whatsapp_channel(settings, client)])
    await app.__aenter__()
    return app


@asynccontextmanager
async def running(settings: Settings) -> AsyncIterator[tuple[App, FakeWhatsAppClient]]:
    client = FakeWhatsAppClient()
    app = await start_app(settings, client)
    try:
        yield app, client
    finally:
        await app.__aexit__(None, None, None)


async def wait_for(
    client: FakeWhatsAppClient, needle: str, after: int = 0, timeout: float = 20
) -> tuple[int, str]:
    """The first send or edit from ``after`` on that contains ``needle``: its index, text."""
    async with asyncio.timeout(timeout):
        while True:
            for i, call in enumerate(client.calls):
                if i >= after and call.name in ("send", "edit") and needle in call.text:
                    return i, call.text
            await asyncio.sleep(0.02)
