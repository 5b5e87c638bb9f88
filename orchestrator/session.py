"""A conversation's live state: FSM state plus the data that must survive a restart.

Every state change goes through one of ``Session``'s named transitions (the triggers of
``orchestrator/fsm.py``); ``settle`` is the one place that tolerates a machine which has
already moved on.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass

from transitions import MachineError
from transitions.extensions.asyncio import AsyncMachine

from core.errors import FetchError
from core.events import SessionKey
from core.session_data import SessionData
from core.state import State
from orchestrator.fsm import build_machine
from orchestrator.store.sessions import SessionPort as SessionTable
from orchestrator.store.sessions import SessionRow


class InvalidTransition(FetchError):
    pass


class _Driven:
    """What the shared machine drives: its state string and trigger methods live here,
    apart from ``Session``, so they never shadow the named transitions."""

    # Both added by AsyncMachine.add_model; declared so the types are known.
    state: str
    trigger: Callable[[str], Awaitable[bool]]

    def __init__(self, persist: Callable[[], Awaitable[None]]) -> None:
        self.persist = persist  # the machine's after_state_change callback


@dataclass(slots=True)
class Turn:
    """The message the chat's worker is handling now, and whose it is: a /stop that comes
    before it has started a task marks it ``stopped``, so it starts none."""

    subject: str
    stopped: bool = False


class Session:
    def __init__(
        self,
        key: SessionKey,
        table: SessionTable,
        data: SessionData,
        machine: AsyncMachine,
        state: State,
    ) -> None:
        self.key = key
        self.data = data
        self._table = table
        self._fsm = _Driven(self.persist)
        machine.add_model(self._fsm, initial=state.value)
        # Held while a handler changes state/data, so a finishing harness run and a new
        # message never interleave their read-modify-write.
        self.lock = asyncio.Lock()
        # Told whenever the session is saved idle (ALERT): the gateway's deferred
        # messages for this chat go back into their queues (``Sessions.on_idle``).
        self.on_idle: Callable[[SessionKey], None] | None = None
        # The message being handled under ``lock`` by the gateway's worker, if any.
        self.turn: Turn | None = None

    @property
    def state(self) -> State:
        return State(self._fsm.state)

    def stop_turn(self, by: str | None) -> bool:
        turn = self.turn
        if turn is None or turn.stopped or (by is not None and turn.subject != by):
            return False
        turn.stopped = True
        return True

    async def persist(self) -> None:
        await self._table.save(self.key, self.state.value, asdict(self.data))
        if self.state is State.ALERT and self.on_idle is not None:
            self.on_idle(self.key)  # messages that waited for a task run now

    async def _move(self, trigger: str) -> None:
        """Run a transition; the machine persists the new state together with ``data``."""
        try:
            await self._fsm.trigger(trigger)
        except MachineError as err:
            raise InvalidTransition(
                f"cannot {trigger.replace('_', ' ')} while {self.state}"
            ) from err

    # -- the transitions of orchestrator/fsm.py, one method each ------------------------
    async def start_task(self) -> None:
        await self._move("start_task")

    async def ask(self) -> None:
        await self._move("ask")

    async def answered(self) -> None:
        await self._move("answered")

    async def propose(self) -> None:
        await self._move("propose")

    async def finish(self) -> None:
        await self._move("finish")

    async def decide(self) -> None:
        await self._move("decide")

    async def pause(self) -> None:
        await self._move("pause")

    async def resume(self) -> None:
        await self._move("resume")

    async def reset(self) -> None:
        await self._move("reset")

    async def settle(self, transition: Callable[[], Awaitable[None]]) -> None:
        """Fire ``transition`` (e.g. ``session.finish``); if the machine refuses because
        the session already moved (``/stop``, ``/clear``, a restart), keep the state and
        just persist ``data``, which the caller has updated either way."""
        try:
            await transition()
        except InvalidTransition:
            await self.persist()


class Sessions:
    """Loads sessions lazily from the store and keeps one live object per key."""

    def __init__(self, table: SessionTable) -> None:
        self._table = table
        self._machine: AsyncMachine = build_machine()
        self._live: dict[SessionKey, Session] = {}
        self._loading = asyncio.Lock()
        self.on_idle: Callable[[SessionKey], None] | None = None  # set by the gateway

    async def get(self, key: SessionKey) -> Session:
        live = self._live.get(key)
        if live is not None:
            return live
        async with self._loading:
            live = self._live.get(key)
            if live is not None:
                return live
            row = await self._table.load(key)
            session = self._made(key, row)
            if row is None:
                await session.persist()
            self._live[key] = session
            return session

    async def preload(self, key: SessionKey) -> bool:
        """``key``'s session made live ahead of its next message, if it has one (none is
        created): the owner's chats at start, so their first message after a restart
        does not wait for the load. False when it has none."""
        if key in self._live:
            return True
        async with self._loading:
            if key in self._live:
                return True
            row = await self._table.load(key)
            if row is None:
                return False
            self._live[key] = self._made(key, row)
            return True

    def _made(self, key: SessionKey, row: SessionRow | None) -> Session:
        """``key``'s session object from its stored row (None: a new one)."""
        state = State(row.state) if row else State.ALERT
        data = SessionData.from_dict(row.data) if row else SessionData()
        session = Session(key, self._table, data, self._machine, state)
        session.on_idle = self._idle
        return session

    def _idle(self, key: SessionKey) -> None:
        if self.on_idle is not None:
            self.on_idle(key)

    def live(self) -> list[Session]:
        return list(self._live.values())
