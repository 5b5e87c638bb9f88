"""A started ``WhatsAppChannel`` over ``FakeWhatsAppClient``, and what reached the gateway."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path
from typing import Any

from channels.whatsapp import WhatsAppChannel
from channels.whatsapp_settings import WhatsAppSettings
from core.events import Inbound
from core.gate import AllowlistGate
from orchestrator.supervisor import TaskSupervisor

from .builders import FRIEND, OWNER, self_chat
from .fake_client import FakeWhatsAppClient

OWNER_CHAT = f"{OWNER}@s.whatsapp.net"
FRIEND_CHAT = f"{FRIEND}@s.whatsapp.net"


class Harness:
    """A started channel, its fake client and what reached the gateway."""

    def __init__(self, channel: WhatsAppChannel, client: FakeWhatsAppClient, home: Path) -> None:
        self.channel, self.client, self.home = channel, client, home
        self.inbox: asyncio.Queue[Inbound] = asyncio.Queue()
        self.sink_threads: set[str] = set()
        self.alerts: list[str] = []
        self._sentinels = 0
        self.supervisor = TaskSupervisor()  # the application's, in a real Fetch
        channel.on_alert = self.alerts.append

    async def sink(self, inbound: Inbound) -> None:
        self.sink_threads.add(threading.current_thread().name)
        await self.inbox.put(inbound)

    async def next(self) -> Inbound:
        return await asyncio.wait_for(self.inbox.get(), 2)

    async def drain(self) -> list[Inbound]:
        """Everything delivered from what was emitted before now. A sentinel marks the
        end of what was handed to the loop (hand-overs are FIFO); the pump serves the
        owner's lane first, so the sentinel may overtake others: wait until both lanes
        are empty too, then take what arrived, the sentinel left out."""
        self._sentinels += 1
        marker = f"SENTINEL{self._sentinels}"
        self.client.emit(self_chat(f"@fetch sentinel {marker}", id=marker))
        got: list[Inbound] = []
        while (item := await self.next()).message_id != marker:
            got.append(item)
        await asyncio.wait_for(self.channel._events.join(), 2)
        while not self.inbox.empty():
            got.append(self.inbox.get_nowait())
        return got

    async def wait_for(self, predicate: Any, within: float = 3.0) -> None:
        deadline = time.monotonic() + within
        while not predicate():
            if time.monotonic() > deadline:
                raise AssertionError("condition not reached in time")
            await asyncio.sleep(0.005)


def settings(**overrides: Any) -> WhatsAppSettings:
    base: dict[str, Any] = {
        "enabled": True,
        "owner": "+1 555 123 4567",
        "min_send_interval_seconds": 0,
        "sends_per_minute": 1000,
    }
    base.update(overrides)
    return WhatsAppSettings(**base)


async def started(tmp_path: Path, client: FakeWhatsAppClient | None = None, **kw: Any) -> Harness:
    client = client or FakeWhatsAppClient()
    ws = kw.pop("ws", settings())
    channel = WhatsAppChannel(
        ws, tmp_path, client=client, gate=AllowlistGate(kw.pop("allowlist", ())), **kw
    )
    harness = Harness(channel, client, tmp_path)
    await channel.start(harness.sink, harness.supervisor)
    return harness
