"""Alerts reach the owner on another channel, and /status lists them."""

from __future__ import annotations

import asyncio
from pathlib import Path

from channels.base import Capabilities
from core.events import Outbound, SendResult
from orchestrator.alerts import Alerts
from orchestrator.messenger import Messenger
from orchestrator.store import Journal, Store
from orchestrator.supervisor import TaskSupervisor


class Rec:
    capabilities = Capabilities()

    def __init__(self, name: str) -> None:
        self.name = name
        self.sent: list[Outbound] = []

    async def send(self, message: Outbound) -> SendResult:
        self.sent.append(message)
        return SendResult("1")


async def test_alert_goes_to_the_second_channel(tmp_path: Path) -> None:
    async with Store(tmp_path / "f.db") as store:
        journal = Journal(tmp_path)
        messenger = Messenger(store, journal)
        wa, tg = Rec("whatsapp"), Rec("telegram")
        messenger.add_channel(wa)  # type: ignore[arg-type]
        messenger.add_channel(tg)  # type: ignore[arg-type]
        supervisor = TaskSupervisor()
        alerts = Alerts(messenger, supervisor, {"whatsapp": "1@s.whatsapp.net", "telegram": "42"})
        alerts.raise_("whatsapp", "logged out: pair again with fetch whatsapp pair")
        await asyncio.sleep(0.05)
        assert wa.sent == [] and len(tg.sent) == 1
        assert tg.sent[0].chat == "42" and "logged out" in tg.sent[0].text
        assert "logged out" in alerts.lines()[0]
        await supervisor.stop()
        journal.close()
