"""/help and /commands list only what the sender may use (the instincts' ``Commands``)."""

from __future__ import annotations

from collections.abc import Sequence

from core.events import SessionKey
from instincts.router import Instinct, InstinctRegistry
from orchestrator.permissions.model import Subject
from orchestrator.permissions.service import Permissions


class VisibleCommands:
    def __init__(
        self,
        registry: InstinctRegistry,
        permissions: Permissions,
        subject: Subject,
        key: SessionKey,
    ) -> None:
        self._registry = registry
        self._permissions = permissions
        self._subject = subject
        self._key = key

    def all(self) -> Sequence[Instinct]:
        return [
            i
            for i in self._registry.all()
            if self._permissions.may(self._subject, f"instinct:{i.name}", self._key)
        ]
