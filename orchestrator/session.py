"""A conversation's live state: FSM state plus the data that must survive a restart."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from transitions import MachineError
from transitions.extensions.asyncio import AsyncMachine

from core.errors import FetchError
from core.events import SessionKey
from core.state import State
from orchestrator.fsm import build_machine
from orchestrator.store import Store


@dataclass
class SessionData:
    """Everything besides the state name that a restart must restore."""

    repo: str | None = None
    harness: str | None = None
    task_id: int | None = None
    task_prompt: str | None = None
    approval_id: int | None = None
    approval_message_id: str | None = None
    question: str | None = None  # what Fetch asked while WAITING
    question_context: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> SessionData:
        known = {k: v for k, v in raw.items() if k in cls.__dataclass_fields__}
        return cls(**known)


class InvalidTransition(FetchError):
    pass


class Session:
    # Added to each model by AsyncMachine.add_model; declared so the type is known.
    trigger: Callable[[str], Awaitable[bool]]

    def __init__(self, key: SessionKey, store: Store, state: str, data: SessionData) -> None:
        self.key = key
        self.data = data
        self.state: str = state  # maintained by the machine
        self._store = store
        # Held while a handler changes state/data, so a finishing harness run and a new
        # message never interleave their read-modify-write.
        self.lock = asyncio.Lock()

    @property
    def fsm_state(self) -> State:
        return State(self.state)

    async def persist(self) -> None:
        await self._store.sessions.save(self.key, self.state, asdict(self.data))

    async def fire(self, trigger: str) -> None:
        """Run a transition and persist the new state together with ``data``."""
        try:
            await self.trigger(trigger)  # added by AsyncMachine.add_model
        except MachineError as err:
            raise InvalidTransition(
                f"cannot {trigger.replace('_', ' ')} while {self.state}"
            ) from err


class Sessions:
    """Loads sessions lazily from the store and keeps one live object per key."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self._machine: AsyncMachine = build_machine()
        self._live: dict[SessionKey, Session] = {}
        self._loading = asyncio.Lock()

    async def get(self, key: SessionKey) -> Session:
        live = self._live.get(key)
        if live is not None:
            return live
        async with self._loading:
            live = self._live.get(key)
            if live is not None:
                return live
            row = await self._store.sessions.load(key)
            state = row.state if row else State.ALERT.value
            data = SessionData.from_dict(row.data) if row else SessionData()
            session = Session(key, self._store, state, data)
            self._machine.add_model(session, initial=state)
            if row is None:
                await session.persist()
            self._live[key] = session
            return session

    def live(self) -> list[Session]:
        return list(self._live.values())
