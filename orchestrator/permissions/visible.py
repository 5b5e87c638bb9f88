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
        instincts = self._registry.all()
        allowed = set(
            self._permissions.visible(
                self._subject, self._key, [f"instinct:{i.name}" for i in instincts]
            )
        )
        return [i for i in instincts if f"instinct:{i.name}" in allowed]
