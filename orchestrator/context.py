"""The typed context every handler receives: built per event, passed, never looked up."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from core.events import Inbound, SendResult
from orchestrator.session import Session

if TYPE_CHECKING:
    from orchestrator.services import Services


@dataclass(slots=True)
class Context:
    inbound: Inbound
    session: Session
    services: Services
    text: str  # the message with the trigger stripped and validated
    args: str = ""  # for commands: everything after the command word

    async def reply(
        self, text: str, *, tokens: tuple[int, int] = (0, 0), model: str | None = None
    ) -> SendResult:
        return await self.services.messenger.send(
            self.session.key, text, tokens=tokens, model=model
        )
