"""/improve /prs's port (instincts ``Improve``): Fetch proposes changes to itself as pull
requests (orchestrator/improve/), bound to the sender so the run is theirs."""

from __future__ import annotations

from instincts.contract import SessionPort
from orchestrator.improve.service import Improver
from orchestrator.session import Sessions


class ImproveFacade:
    def __init__(self, improver: Improver, sessions: Sessions, requester: str = "owner") -> None:
        self._improver = improver
        self._sessions = sessions
        self._requester = requester

    def of(self, requester: str) -> ImproveFacade:
        return ImproveFacade(self._improver, self._sessions, requester)

    async def improve(self, session: SessionPort, request: str) -> str | None:
        # The application's own Session object (the runner drives it), never a copy.
        live = await self._sessions.get(session.key)
        return await self._improver.improve(live, request, self._requester)

    async def pull_requests(self) -> str:
        return await self._improver.listing()
