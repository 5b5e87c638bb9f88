"""The real ``NeonizeClient`` (real neonize, real Go library), offline.

WhatsApp's servers are unreachable here, so nothing connects; what can run does: the
device store, and neonize's own callback entry points (``Event.execute`` and the QR
callback, which the Go side calls from its threads) feeding the real adapter.
"""

from __future__ import annotations

import asyncio
import ctypes
import os
import threading
from pathlib import Path
from typing import Any

import neonize.aioze.events as neonize_events
import pytest
from neonize.events import EVENT_TO_INT
from neonize.proto.Neonize_pb2 import Device

from channels.whatsapp import WhatsAppChannel
from channels.whatsapp import _neonize as nz
from channels.whatsapp.client import NeonizeClient
from core.events import Inbound
from orchestrator.supervisor import TaskSupervisor

from .builders import FETCH, OWNER, jid, text_from
from .harness import settings


class OfflineNeonizeClient(NeonizeClient):
    """The real client with the two calls that would need WhatsApp's servers stubbed."""

    async def paired(self) -> bool:
        return True

    async def connect(self) -> None:
        self.connects = getattr(self, "connects", 0) + 1


def go_calls_back(client: NeonizeClient, event: Any) -> None:
    """What neonize's Go side does for an event: wire bytes -> Event.execute, own thread."""
    data = event.SerializeToString()
    buf = ctypes.create_string_buffer(data, len(data))
    code = EVENT_TO_INT[type(event)]
    thread = threading.Thread(
        target=client._client.event.execute,
        args=(0, ctypes.addressof(buf), len(data), code),
        name="go-callback",
    )
    thread.start()
    thread.join()


@pytest.fixture
async def neonize_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    # neonize schedules handlers on the loop of the first connect(); no connect here.
    monkeypatch.setattr(neonize_events, "event_global_loop", asyncio.get_running_loop())


async def test_a_fresh_device_store_is_not_paired_and_is_private(tmp_path: Path) -> None:
    client = NeonizeClient(tmp_path / "whatsapp" / "device.db")
    assert await client.paired() is False
    assert os.stat(tmp_path / "whatsapp" / "device.db").st_mode & 0o777 == 0o600
    assert await client.is_connected() is False  # never asks Go about an unstarted client
    await client.disconnect()  # nothing started: a no-op


async def test_neonize_callbacks_reach_the_adapter(tmp_path: Path, neonize_loop: None) -> None:
    client = OfflineNeonizeClient(tmp_path / "whatsapp" / "device.db")
    channel = WhatsAppChannel(settings(), tmp_path, client=client)
    inbox: asyncio.Queue[Inbound] = asyncio.Queue()

    async def sink(inbound: Inbound) -> None:
        await inbox.put(inbound)

    await channel.start(sink, TaskSupervisor())
    try:
        go_calls_back(
            client,
            Device(
                JID=jid(FETCH),
                LID=jid("207391234567890", "lid"),
                Platform="",
                BussinessName="",
                PushName="Fetch",
                Initialized=True,
            ),
        )
        assert client.own_users() == {FETCH, "207391234567890"}
        go_calls_back(client, nz.ConnectedEv(status=True))
        go_calls_back(client, text_from(OWNER, "/status", id="3EB0REAL"))
        inbound = await asyncio.wait_for(inbox.get(), 3)
        assert (inbound.message_id, inbound.text, inbound.from_owner) == (
            "3EB0REAL",
            "/status",
            True,
        )
        assert channel.health().startswith("whatsapp: connected")
    finally:
        await channel.stop()


async def test_the_qr_callback_becomes_a_qr_event(tmp_path: Path, neonize_loop: None) -> None:
    client = NeonizeClient(tmp_path / "device.db")
    got: list[Any] = []
    seen = asyncio.Event()
    loop = asyncio.get_running_loop()

    def sink(event: Any) -> None:
        got.append(event)
        loop.call_soon_threadsafe(seen.set)

    client.set_event_sink(sink)
    code = ctypes.create_string_buffer(b"2@AbC,dEf==,GhI==")
    # The function neonize registers with Go as the QR callback.
    qr_callback = client._client._NewAClient__onQr
    await asyncio.to_thread(qr_callback, 0, ctypes.addressof(code))
    await asyncio.wait_for(seen.wait(), 3)
    assert isinstance(got[0], nz.QREv) and list(got[0].Codes) == ["2@AbC,dEf==,GhI=="]
