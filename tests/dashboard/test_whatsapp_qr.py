"""The health page with the real WhatsApp adapter (over the fake neonize client, fed
real protobuf events): the link state, and the pairing QR WhatsApp sends drawn as an SVG
by Fetch; when WhatsApp is not configured the page says so."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

from neonize.proto.Neonize_pb2 import ConnectFailureReason

from channels.whatsapp import WhatsAppChannel
from channels.whatsapp import _neonize as nz
from orchestrator.config import Settings
from orchestrator.dashboard.qr import qr_svg
from tests.channels.whatsapp.builders import FETCH, jid
from tests.channels.whatsapp.fake_client import Call, FakeWhatsAppClient
from tests.channels.whatsapp.harness import settings as wa_settings
from tests.dashboard.conftest import Web, start_web, stop_web

CODE = "2@Qm9ndXMgcGFpcmluZyBjb2Rl,abc/def+ghi==,xyz<script>,1"


async def test_the_pairing_qr_is_an_svg_fetch_draws(
    web_settings: Callable[..., Settings], tmp_path: Path
) -> None:
    client = FakeWhatsAppClient()
    channel = WhatsAppChannel(wa_settings(), tmp_path / "wa", client=client)
    web = await start_web(web_settings(), channels=[channel])
    try:
        status, body = await web.get("/health")
        assert status == 200 and "whatsapp: connected" in body
        assert "pairing-qr" not in body
        status, _ = await web.get("/health/whatsapp-qr.svg")
        assert status == 404
        client.emit(
            nz.LoggedOutEv(OnConnect=False, Reason=ConnectFailureReason.LOGGED_OUT)
        )  # WhatsApp dropped the link ...
        client.emit(nz.DisconnectedEv(status=True))
        client.emit(nz.QREv(Codes=[CODE, "2@older"]))  # ... and asks to pair again
        for _ in range(300):  # events reach the adapter through its own queue
            if channel.pairing_code() is not None:
                break
            await asyncio.sleep(0.01)
        assert channel.pairing_code() == CODE
        status, body = await web.get("/health")
        assert 'id="pairing-qr"' in body and 'src="/health/whatsapp-qr.svg"' in body
        assert "xyz<script>" not in body
        async with web.client.get(web.base + "/health/whatsapp-qr.svg") as r:
            assert r.status == 200 and r.content_type == "image/svg+xml"
            svg = await r.read()
        assert svg.startswith(b"<svg") and svg == qr_svg(CODE)
        assert svg != qr_svg("2@older") and b"script" not in svg
        async with web.anon.get(web.base + "/health/whatsapp-qr.svg") as r:
            assert r.status == 401  # the code links a phone to Fetch: the owner's only
    finally:
        await stop_web(web)


async def test_without_whatsapp_the_health_page_says_so(web: Web) -> None:
    status, body = await web.get("/health")
    assert status == 200
    assert "WhatsApp is not configured" in body
    assert web.services.kennel.name in body
    status, _ = await web.get("/health/whatsapp-qr.svg")
    assert status == 404


class UnpairedClient(FakeWhatsAppClient):
    """Like neonize on a device store with no device: connecting brings QR codes, not a
    session; scanning one pairs it (the test emits what WhatsApp would)."""

    def __init__(self) -> None:
        super().__init__(paired=False)

    async def connect(self) -> None:
        self.calls.append(Call("connect"))


async def test_linking_from_the_dashboard_shows_the_codes_then_connects(
    web_settings: Callable[..., Settings], tmp_path: Path
) -> None:
    client = UnpairedClient()
    channel = WhatsAppChannel(wa_settings(), tmp_path / "wa", client=client)
    web = await start_web(web_settings(), channels=[channel])
    try:
        status, body = await web.get("/health")
        assert "not paired" in body and 'id="whatsapp-link"' in body
        assert client.named("connect") == []  # nothing is asked of WhatsApp unasked
        status, _loc, _ = await web.post("/health/whatsapp/link", {})
        assert status == 403 and client.named("connect") == []
        status, location, _ = await web.post("/health/whatsapp/link", {"csrf": web.csrf()})
        assert status == 303 and "waiting" in location
        assert len(client.named("connect")) == 1
        client.emit(nz.QREv(Codes=[CODE]))
        await _until(lambda: channel.pairing_code() == CODE)
        status, body = await web.get("/health")
        assert 'id="pairing-qr"' in body and "asks to pair again" not in body
        async with web.client.get(web.base + "/health/whatsapp-qr.svg") as r:
            assert r.status == 200 and await r.read() == qr_svg(CODE)
        client._paired = True  # what the scan writes to the device store
        client.emit(
            nz.PairStatusEv(
                ID=jid(FETCH),
                BusinessName="",
                Platform="android",
                Status=nz.PairStatusEv.SUCCESS,
                Error="",
            )
        )
        client.emit(nz.ConnectedEv(status=True))
        await _until(lambda: "connected" in channel.health())
        assert channel.pairing_code() is None
        status, body = await web.get("/health")
        assert "whatsapp: connected" in body and "pairing-qr" not in body
        assert 'id="whatsapp-link"' not in body
        status, location, _ = await web.post("/health/whatsapp/link", {"csrf": web.csrf()})
        assert "already%20linked" in location and len(client.named("connect")) == 1
    finally:
        await stop_web(web)


async def _until(check: Callable[[], bool]) -> None:
    for _ in range(300):  # events reach the adapter through its own queue
        if check():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("not reached in 3 s")
