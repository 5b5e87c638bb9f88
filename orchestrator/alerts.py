"""Alerts about Fetch itself (WhatsApp logged out, banned, replaced by another device):
logged, kept for /status, and sent to the owner on a second channel when one exists."""

from __future__ import annotations

import logging
import time
from collections import deque

from core.events import SessionKey
from orchestrator.messenger import Messenger
from orchestrator.supervisor import TaskSupervisor

log = logging.getLogger(__name__)


class Alerts:
    def __init__(
        self,
        messenger: Messenger,
        supervisor: TaskSupervisor,
        owner_chats: dict[str, str],
    ) -> None:
        self._messenger = messenger
        self._supervisor = supervisor
        self._owner_chats = owner_chats  # channel name -> the owner's chat on it
        self.recent: deque[tuple[float, str, str]] = deque(maxlen=5)

    def raise_(self, source: str, text: str) -> None:
        """Callable from any adapter callback (sync); the sending is an owned task."""
        log.warning("alert from %s: %s", source, text)
        self.recent.append((time.time(), source, text))
        for channel, chat in self._owner_chats.items():
            if channel == source:
                continue  # the channel in trouble cannot carry its own alert
            self._supervisor.spawn(
                self._messenger.send(SessionKey(channel, chat), f"🚨 {source}: {text}"),
                name=f"alert:{channel}",
            )
            return

    def lines(self) -> list[str]:
        return [
            f"🚨 {source}: {text} ({time.strftime('%H:%M', time.localtime(ts))})"
            for ts, source, text in self.recent
        ]
