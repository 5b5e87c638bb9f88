"""/grants (instincts/grants.py): the owner lists, revokes and answers; answered in words
(the instincts' ``Grants`` port)."""

from __future__ import annotations

from core.events import SessionKey
from orchestrator.permissions.model import Subject
from orchestrator.permissions.service import Permissions


class GrantsFacade:
    def __init__(self, permissions: Permissions, subject: Subject, key: SessionKey) -> None:
        self._permissions = permissions
        self._subject = subject
        self._key = key

    @property
    def for_owner(self) -> bool:
        return self._subject.is_owner

    @property
    def subject_id(self) -> str:
        return self._subject.id

    def listing(self) -> str:
        return self._permissions.listing()

    async def revoke(self, grant_id: int) -> str:
        return await self._permissions.revoke(grant_id)

    async def answer(self, nonce: str, yes: bool, scope: str) -> str:
        return await self._permissions.answer(nonce, yes, scope)

    async def grant(self, who: str, action: str, scope: str) -> str:
        return await self._permissions.grant(who, action, scope, self._key)
